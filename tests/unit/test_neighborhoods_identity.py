"""Stable neighborhood ids: kept by the group holding most of an old neighborhood's files."""

from __future__ import annotations

import hashlib

from processors.neighborhoods.identity import assign_ids, fresh_id


def files(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(sorted(f"{prefix}/{i}.py" for i in range(n)))


def test_a_fresh_id_is_a_short_sha1_of_the_sorted_members() -> None:
    digest = hashlib.sha1(b"a/x.py\nb/y.py").hexdigest()[:12]
    assert fresh_id(("a/x.py", "b/y.py"), ()) == f"nb-{digest}"


def test_a_fresh_id_never_equals_a_taken_id() -> None:
    plain = fresh_id(("a.py",), ())
    salted = fresh_id(("a.py",), {plain})

    assert salted != plain
    assert salted == fresh_id(("a.py",), {plain})  # still deterministic
    assert fresh_id(("a.py",), {plain, salted}) not in {plain, salted}


def test_without_a_previous_partition_every_group_gets_a_fresh_id() -> None:
    groups = [files("a", 3), files("b", 2)]
    assert assign_ids(groups, {}) == (fresh_id(groups[0], ()), fresh_id(groups[1], ()))


def test_a_group_holding_more_than_half_of_an_old_neighborhood_keeps_its_id() -> None:
    old = files("m", 5)
    previous = dict.fromkeys(old, "nb-old")
    grown = tuple(sorted(old[:3] + files("new", 10)))

    assert assign_ids([grown, old[3:]], previous) == ("nb-old", fresh_id(old[3:], {"nb-old"}))


def test_exactly_half_is_not_enough() -> None:
    old = files("m", 4)
    ids = assign_ids([old[:2], old[2:]], dict.fromkeys(old, "nb-old"))
    assert "nb-old" not in ids
    assert len(set(ids)) == 2


def test_the_share_counts_only_files_that_still_exist() -> None:
    old = files("m", 6)
    # Four of the six files were deleted; the two left are all that survives of nb-old.
    assert assign_ids([old[:2]], dict.fromkeys(old, "nb-old")) == ("nb-old",)


def test_a_merge_keeps_the_id_of_the_larger_overlap_and_retires_the_other() -> None:
    a, b = files("a", 6), files("b", 4)
    previous = dict.fromkeys(a, "nb-a") | dict.fromkeys(b, "nb-b")
    assert assign_ids([tuple(sorted(a + b))], previous) == ("nb-a",)


def test_equal_overlaps_prefer_the_higher_share_then_the_smaller_id() -> None:
    a, b, c = files("a", 3), files("b", 3), files("c", 3)
    extra = files("z", 1)
    # nb-a: 3 of 3 kept here; nb-b: 3 of 4 (its fourth file went elsewhere).
    previous = dict.fromkeys(a, "nb-a") | dict.fromkeys(b + extra, "nb-b")
    assert assign_ids([tuple(sorted(a + b)), extra], previous)[0] == "nb-a"
    # Same share: the smaller id wins.
    previous = dict.fromkeys(c, "nb-c") | dict.fromkeys(b, "nb-b")
    assert assign_ids([tuple(sorted(b + c))], previous) == ("nb-b",)


def test_each_old_id_goes_to_one_group_only() -> None:
    old = files("m", 9)
    previous = dict.fromkeys(old, "nb-old")
    ids = assign_ids([old[:3], old[3:6], old[6:]], previous)
    assert len(set(ids)) == 3
    assert "nb-old" not in ids


def test_a_fresh_id_avoids_the_ids_of_the_previous_partition() -> None:
    members = files("m", 2)
    spelled = fresh_id(members, ())
    # An old neighborhood (whose files are gone) already spells the id these members hash to.
    ids = assign_ids([members], {"gone.py": spelled})

    assert ids == (fresh_id(members, {spelled}),)
    assert ids[0] != spelled
