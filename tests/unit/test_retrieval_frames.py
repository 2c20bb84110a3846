"""The innermost own frames of the stack traces a question quotes."""

from __future__ import annotations

from query.search.frames import innermost_frames
from query.search.ranking import is_source

PATHS = frozenset(
    {
        "src/app/models.py",
        "src/app/api.py",
        "src/app/packages/urllib3/response.py",
        "tools/models.py",
        "setup.py",
        "web/src/index.js",
        "svc/handler.go",
        "core/src/main/java/com/acme/Shop.java",
        "crates/core/src/lib.rs",
    }
)
PYTHON_TRACE = """Crash when reading a response:
```
Traceback (most recent call last):
  File "/home/u/venv/lib/python3.12/site-packages/app/api.py", line 67, in get
    return session.text
  File "/home/u/venv/lib/python3.12/site-packages/app/models.py", line 721, in text
    if not self.content:
  File "/home/u/venv/lib/python3.12/site-packages/app/packages/urllib3/response.py", line 9
    data = self._fp.read(amt)
  File "/usr/lib/python3.12/socket.py", line 380, in read
socket.error: [Errno 104] Connection reset by peer
```"""


def test_the_innermost_own_frame_of_a_python_traceback_is_found() -> None:
    # the vendored frame and the standard library's are passed over
    assert frames(PYTHON_TRACE) == ["src/app/models.py"]
    ipython = "File ~/code/app/api.py:265, in Plot._repr_png_(self)\n"
    pytest_report = "src/app/api.py:12: in test_x\n    f()\nsetup.py:3: in <module>\n"
    assert frames(ipython) == ["src/app/api.py"]
    assert frames(pytest_report) == ["setup.py"]  # a root file: its name


def test_the_innermost_own_frame_of_other_languages_traces_is_found() -> None:
    js = (
        "TypeError: x is undefined\n"
        "    at render (/srv/web/src/index.js:10:5)\n    at main.js:1:1\n"
    )
    java = (
        "java.lang.NullPointerException\n"
        "\tat com.acme.Shop.checkout(Shop.java:42)\n\tat com.acme.Main.main(Main.java:7)\n"
    )
    go = "goroutine 1 [running]:\nmain.handle()\n\t/home/u/svc/handler.go:23 +0x1d\n"
    rust = "stack backtrace:\n   0: core::run\n             at ./crates/core/src/lib.rs:10:5\n"
    assert frames(js) == ["web/src/index.js"]
    assert frames(java) == ["core/src/main/java/com/acme/Shop.java"]
    assert frames(go) == ["svc/handler.go"]
    assert frames(rust) == ["crates/core/src/lib.rs"]


def test_a_frame_naming_no_one_file_names_none() -> None:
    # models.py alone: src/app/models.py and tools/models.py share nothing more with it
    assert frames('File "models.py", line 3, in f\n') == []
    assert frames("no trace here: app/models.py line 3") == []


def frames(text: str) -> list[str]:
    return innermost_frames(text, PATHS, own=lambda path: is_source(path, "any"))
