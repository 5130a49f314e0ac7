"""A step's last vectors: reused for known texts, embedded for new ones, only the current kept;
saved by appending only new rows."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphunified_assets.lib.vectors import row_file, text_vectors
from graphunified_assets.lib.vectors.text_vectors import TextVectors, load_vectors, save_vectors


class _Embed:
    def __init__(self, dimension: int = 4) -> None:
        self.asked: list[str] = []
        self.dimension = dimension

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.asked += texts
        return np.array([_vector(t)[: self.dimension] for t in texts], np.float32)


def _vector(text: str) -> list[float]:
    """A text's own vector: what any run embeds it to."""
    return [len(text), ord(text[0]), sum(map(ord, text)) % 97, 1]


def _vectors_of(texts: list[str]) -> np.ndarray:
    return np.array([_vector(t) for t in texts], np.float32).reshape(len(texts), 4)


def _row_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("vectors.*.f32"))


def test_known_texts_come_from_the_last_run_and_only_new_ones_are_embedded(tmp_path: Path) -> None:
    embed = _Embed()
    vectors = TextVectors()
    first = vectors.lookup(["Hale", "Leeds", "Hale"], embed)
    assert embed.asked == ["Hale", "Leeds"] and first.shape == (3, 4)
    np.testing.assert_array_equal(first[0], first[2])
    folder = tmp_path / "vectors"
    save_vectors(folder, "model-a", {"none": TextVectors(), "names": vectors})  # a set may be empty
    assert load_vectors(folder, "model-a")["none"].texts == []
    loaded = load_vectors(folder, "model-a")["names"]
    embed.asked = []
    second = loaded.lookup(["Leeds", "Millbrook", "Hale"], embed)
    assert embed.asked == ["Millbrook"]  # the others from the folder
    np.testing.assert_array_equal(second[0], first[1])
    np.testing.assert_array_equal(second[2], first[0])
    assert loaded.texts == ["Leeds", "Millbrook", "Hale"]  # exactly what was asked: Hale once


def test_a_save_appends_only_the_new_texts_rows(tmp_path: Path) -> None:
    """The row file is not rewritten: it grows by the new texts' rows alone, and a text two sets
    share is one row."""
    folder = tmp_path / "vectors"
    people, places = TextVectors(), TextVectors()
    people.lookup(["Hale", "Vance", "Pryor"], _Embed())
    places.lookup(["Leeds", "Hale"], _Embed())
    save_vectors(folder, "m", {"PERSON": people, "LOCATION": places})
    (file,) = _row_files(folder)
    assert file.stat().st_size == 4 * 4 * 4  # Hale, Vance, Pryor, Leeds
    inode = file.stat().st_ino
    loaded = load_vectors(folder, "m")
    loaded["PERSON"].lookup(["Hale", "Grubb", "Vance"], _Embed())  # Pryor gone, Grubb new
    save_vectors(folder, "m", loaded)
    assert _row_files(folder) == [file] and file.stat().st_ino == inode
    assert file.stat().st_size == 5 * 4 * 4  # Grubb appended; Pryor's row stays, named by no set
    again = load_vectors(folder, "m")
    assert again["PERSON"].texts == ["Hale", "Grubb", "Vance"]
    assert again["LOCATION"].texts == ["Leeds", "Hale"]
    np.testing.assert_array_equal(again["PERSON"].matrix, _vectors_of(again["PERSON"].texts))


def test_once_most_rows_are_dead_the_live_ones_go_to_a_new_file(tmp_path: Path) -> None:
    folder = tmp_path / "vectors"
    vectors = TextVectors()
    vectors.lookup(["Zelda Vantrim", "Orla Quist", "Bram Toller", "Leeds"], _Embed())
    save_vectors(folder, "m", {"names": vectors})
    vectors.keep(["Leeds", "Orla Quist"])  # two of four dead: not most
    save_vectors(folder, "m", {"names": vectors})
    assert b"Vantrim" in (folder / "index.npz").read_bytes()
    vectors.keep(["Leeds"])
    save_vectors(folder, "m", {"names": vectors})
    (file,) = _row_files(folder)
    assert file.stat().st_size == 4 * 4 and b"Vantrim" not in (folder / "index.npz").read_bytes()
    loaded = load_vectors(folder, "m")["names"]
    assert loaded.texts == ["Leeds"]
    np.testing.assert_array_equal(loaded.matrix, [_vector("Leeds")])


def test_a_save_stopped_before_its_index_leaves_the_last_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows appended by a save that never wrote its index are past what the index names: the
    next load reads the last save's sets, and the next save writes over them."""
    folder = tmp_path / "vectors"
    vectors = TextVectors()
    vectors.lookup(["Hale", "Leeds"], _Embed())
    save_vectors(folder, "m", {"names": vectors})
    vectors.lookup(["Hale", "Leeds", "Millbrook"], _Embed())

    def crash(*args: object) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(text_vectors, "_write_index", crash)
        with pytest.raises(OSError):
            save_vectors(folder, "m", {"names": vectors})
    (file,) = _row_files(folder)
    assert file.stat().st_size == 3 * 4 * 4  # the crashed save's row is on disk
    assert load_vectors(folder, "m")["names"].texts == ["Hale", "Leeds"]
    other = TextVectors()
    other.lookup(["Hale", "Leeds", "Orla Quist"], _Embed())
    save_vectors(folder, "m", {"names": other})
    loaded = load_vectors(folder, "m")["names"]
    assert file.stat().st_size == 3 * 4 * 4 and loaded.texts == ["Hale", "Leeds", "Orla Quist"]
    np.testing.assert_array_equal(loaded.matrix, _vectors_of(loaded.texts))


def test_another_models_torn_or_missing_folder_is_not_read(tmp_path: Path) -> None:
    vectors = TextVectors()
    vectors.lookup(["Hale"], _Embed())
    folder = tmp_path / "vectors"
    save_vectors(folder, "model-a", {"names": vectors})
    assert load_vectors(folder, "model-b") == {}
    (file,) = _row_files(folder)
    file.write_bytes(file.read_bytes()[:8])  # shorter than the index says
    assert load_vectors(folder, "model-a") == {}
    save_vectors(folder, "model-a", {"names": vectors})
    index = folder / "index.npz"
    index.write_bytes(index.read_bytes()[:200])
    assert load_vectors(folder, "model-a") == {}
    assert load_vectors(tmp_path / "none", "model-a") == {}


def test_a_save_of_another_dimension_starts_a_new_file(tmp_path: Path) -> None:
    folder = tmp_path / "vectors"
    vectors = TextVectors()
    vectors.lookup(["Hale", "Leeds"], _Embed(dimension=4))
    save_vectors(folder, "m", {"names": vectors})
    narrow = TextVectors()
    narrow.lookup(["Hale"], _Embed(dimension=3))
    save_vectors(folder, "m", {"names": narrow})
    loaded = load_vectors(folder, "m")["names"]
    assert loaded.matrix.shape == (1, 3) and len(_row_files(folder)) == 1


def test_the_single_file_it_replaced_is_read_until_the_first_save_removes_it(tmp_path: Path) -> None:
    """A home saved before the folder keeps its vectors: the first load reads the old file."""
    old = tmp_path / "vectors.npz"
    lengths, data = text_vectors.encode_texts(["Hale", "Leeds"])
    matrix = _vectors_of(["Hale", "Leeds"])
    np.savez(
        old, key=np.array("m"), name_0=np.array("names"), lengths_0=lengths, texts_0=data, matrix_0=matrix
    )
    folder = tmp_path / "vectors"
    assert load_vectors(folder, "other") == {}
    loaded = load_vectors(folder, "m")
    embed = _Embed()
    loaded["names"].lookup(["Leeds", "Hale", "Grubb"], embed)
    assert embed.asked == ["Grubb"]
    save_vectors(folder, "m", loaded)
    assert not old.exists()
    assert load_vectors(folder, "m")["names"].texts == ["Leeds", "Hale", "Grubb"]
    (tmp_path / "torn.npz").write_bytes(b"PK torn")
    assert load_vectors(tmp_path / "torn", "m") == {}


def test_rows_of_another_dimension_are_embedded_again() -> None:
    vectors = TextVectors()
    vectors.lookup(["Hale"], _Embed(dimension=4))
    embed = _Embed(dimension=3)
    assert vectors.lookup(["Hale", "Leeds"], embed).shape == (2, 3)
    assert embed.asked == ["Leeds", "Hale", "Leeds"]  # the new text first, then all again


NAMES = st.sampled_from(["Hale", "Leeds", "Vance", "Pryor", "Grubb", "Orion", "Kendal", "Carrick"])
SETS = st.sampled_from(["PERSON", "LOCATION", "EVENT"])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(SETS, st.lists(NAMES, max_size=6)), min_size=1, max_size=12),
    st.sampled_from([0.0, 0.5, 1.0]),
)
def test_after_any_runs_each_set_loads_as_its_last_run_left_it(
    runs: list[tuple[str, list[str]]], compact_share: float
) -> None:
    """Each run loads the folder, looks up one set's names (the others as they were), saves; the
    loaded sets are exactly each set's last texts with their own vectors, and only texts no run
    held before are embedded."""
    last: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(row_file, "COMPACT_SHARE", compact_share)
        folder = Path(tmp) / "vectors"
        for name, texts in runs:
            sets = load_vectors(folder, "m")
            assert {n: v.texts for n, v in sets.items()} == last
            for vectors in sets.values():
                np.testing.assert_array_equal(vectors.matrix.reshape(-1, 4), _vectors_of(vectors.texts))
            embed = _Embed()
            current = sets.setdefault(name, TextVectors())
            current.lookup(texts, embed)
            assert set(embed.asked) <= set(texts) - set(last.get(name, []))
            save_vectors(folder, "m", sets)
            last[name] = list(texts)
