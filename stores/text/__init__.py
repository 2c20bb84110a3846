"""Text and embedding adapters both sides use: tokens, embedders (hash, ONNX, HTTP), the
embedding cache and the dense fill of a vector store."""
