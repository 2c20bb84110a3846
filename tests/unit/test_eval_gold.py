"""The functions a fix changed, derived from its patch at the base commit
(deploy/eval_gold.py): removed and changed lines count for the innermost symbol holding
them, a pure insertion for the symbol holding both of its neighbours, anything else for
the module; in Python, Go, Rust, Java and JavaScript, as Gazetteer's parser sees them."""

from __future__ import annotations

from deploy.eval_gold import Changes, changed_functions, patch_changes

PYTHON = b"""import os

LIMIT = 3


class Cart:
    size = 1

    def total(self, items):
        return sum(items)

    def empty(self):
        def inner():
            return 0
        return inner()


def helper():
    return LIMIT
"""

PYTHON_PATCH = """diff --git a/a.py b/a.py
index 1111111..2222222 100644
--- a/a.py
+++ b/a.py
@@ -3,1 +3,2 @@
 LIMIT = 3
+DEFAULT = 0
@@ -7,4 +8,4 @@ class Cart:
-    size = 1
+    size = 2
\x20
     def total(self, items):
-        return sum(items)
+        return sum(items) + 0
@@ -14,1 +15,1 @@ class Cart:
-            return 0
+            return 1
@@ -19 +20,2 @@ def helper():
     return LIMIT
+# end
"""


def test_the_patch_is_read_into_removed_lines_and_insertion_points() -> None:
    assert patch_changes(PYTHON_PATCH) == {
        "a.py": Changes(removed={7, 10, 14}, inserted_after={3, 7, 10, 14, 19})
    }


def test_python_changes_fall_in_the_innermost_def_or_class() -> None:
    # line 7 (a class attribute) is the class's; line 14 the nested function's; the
    # insertions after LIMIT (a variable) and after helper's last line are the module's
    assert changed_functions(PYTHON_PATCH, {"a.py": PYTHON}) == [
        "a.py::<module>",
        "a.py::Cart",
        "a.py::Cart.total",
        "a.py::Cart.empty.inner",
    ]


def test_files_without_a_source_are_left_out() -> None:
    assert changed_functions(PYTHON_PATCH, {}) == []
    assert changed_functions(PYTHON_PATCH, {"b.py": PYTHON}) == []


GO = b"""package cart

import "fmt"

type Cart struct {
\tItems []int
}

func (c *Cart) Total() int {
\tn := 0
\tfor _, i := range c.Items {
\t\tn += i
\t}
\treturn n
}

func Show(c *Cart) {
\tfmt.Println(c.Total())
}
"""

GO_PATCH = """--- a/a.go
+++ b/a.go
@@ -6 +6,2 @@
-\tItems []int
+\tItems []int
+\tName  string
@@ -9,2 +10,3 @@
 func (c *Cart) Total() int {
+\t// sum
 \tn := 0
@@ -15,0 +18,4 @@
+
+func (c *Cart) Count() int {
+\treturn len(c.Items)
+}
"""


def test_go_an_insertion_after_a_signature_is_inside_after_a_closing_brace_is_not() -> None:
    assert changed_functions(GO_PATCH, {"a.go": GO}) == [
        "a.go::<module>",
        "a.go::Cart",
        "a.go::Cart.Total",
    ]


RUST = b"""use std::fmt;

pub struct Cart {
    items: Vec<u32>,
}

impl Cart {
    pub fn total(&self) -> u32 {
        self.items.iter().sum()
    }

    pub fn empty(&self) -> bool {
        self.items.is_empty()
    }
}

fn helper() -> u32 {
    3
}
"""

RUST_PATCH = """diff --git a/src/a.rs b/src/a.rs
--- a/src/a.rs
+++ b/src/a.rs
@@ -1,2 +1 @@
-use std::fmt;
\x20
@@ -10,5 +9,9 @@ impl Cart {
     }
\x20
+    pub fn len(&self) -> usize {
+        self.items.len()
+    }
+
     pub fn empty(&self) -> bool {
-        self.items.is_empty()
+        self.items.len() == 0
     }
@@ -18 +21 @@ fn helper() -> u32 {
-    3
+    4
"""


def test_rust_a_method_added_between_methods_of_an_impl_is_module_level() -> None:
    # an impl block is no symbol: what lies between its methods is the module's
    assert changed_functions(RUST_PATCH, {"src/a.rs": RUST}) == [
        "src/a.rs::<module>",
        "src/a.rs::Cart.empty",
        "src/a.rs::helper",
    ]


JAVA = b"""package shop;

import java.util.List;

public class Cart {
    private List<Integer> items;

    public int total() {
        int n = 0;
        for (int i : items) n += i;
        return n;
    }

    public boolean empty() {
        return items.isEmpty();
    }
}
"""

JAVA_PATCH = """--- a/src/main/java/shop/Cart.java
+++ b/src/main/java/shop/Cart.java
@@ -6 +6 @@ public class Cart {
-    private List<Integer> items;
+    private final List<Integer> items;
@@ -15 +15 @@ public class Cart {
-        return items.isEmpty();
+        return items.size() == 0;
"""


def test_java_a_field_is_its_class_a_body_line_its_method() -> None:
    path = "src/main/java/shop/Cart.java"
    assert changed_functions(JAVA_PATCH, {path: JAVA}) == [f"{path}::Cart", f"{path}::Cart.empty"]


JAVASCRIPT = b"""const LIMIT = 3;

class Cart {
  constructor(items) {
    this.items = items;
  }

  total() {
    return this.items.reduce((a, b) => a + b, 0);
  }
}

function helper() {
  return LIMIT;
}

module.exports = { Cart, helper };
"""

JAVASCRIPT_PATCH = """diff --git a/lib/cart.js b/lib/cart.js
--- a/lib/cart.js
+++ b/lib/cart.js
@@ -0,0 +1 @@
+'use strict';
@@ -9 +10 @@ class Cart {
-    return this.items.reduce((a, b) => a + b, 0);
+    return this.items.reduce((a, b) => a + b, LIMIT);
diff --git a/lib/new.js b/lib/new.js
new file mode 100644
--- /dev/null
+++ b/lib/new.js
@@ -0,0 +1 @@
+module.exports = 1;
diff --git a/test/cart.test.js b/test/cart.test.js
--- a/test/cart.test.js
+++ b/test/cart.test.js
@@ -1 +1 @@
-a
+b
"""


def test_javascript_an_insertion_at_the_top_is_the_module_and_new_files_are_left_out() -> None:
    changes = patch_changes(JAVASCRIPT_PATCH)
    assert sorted(changes) == ["lib/cart.js", "test/cart.test.js"]
    assert changes["lib/cart.js"] == Changes(removed={9}, inserted_after={0, 9})
    assert changed_functions(JAVASCRIPT_PATCH, {"lib/cart.js": JAVASCRIPT}) == [
        "lib/cart.js::<module>",
        "lib/cart.js::Cart.total",
    ]
