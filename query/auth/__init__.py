"""Who is asking: bearer tokens folded from the tokens topic (`TokenBook`), the
`Principal` a request runs as, and the ASGI middleware that checks them (issue 19)."""
