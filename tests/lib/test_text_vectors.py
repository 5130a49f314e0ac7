"""A step's last vectors: reused for known texts, embedded for new ones, only the current kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphunified_assets.lib.vectors.text_vectors import TextVectors, load_vectors, save_vectors


class _Embed:
    def __init__(self, dimension: int = 4) -> None:
        self.asked: list[str] = []
        self.dimension = dimension

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.asked += texts
        return np.array(
            [[len(t), ord(t[0]), i, 1][: self.dimension] for i, t in enumerate(texts)], np.float32
        )


def test_known_texts_come_from_the_last_run_and_only_new_ones_are_embedded(tmp_path: Path) -> None:
    embed = _Embed()
    vectors = TextVectors()
    first = vectors.lookup(["Hale", "Leeds", "Hale"], embed)
    assert embed.asked == ["Hale", "Leeds"] and first.shape == (3, 4)
    np.testing.assert_array_equal(first[0], first[2])
    path = tmp_path / "vectors.npz"
    save_vectors(path, "model-a", {"none": TextVectors(), "names": vectors})  # a set may be empty
    assert load_vectors(path, "model-a")["none"].texts == []
    loaded = load_vectors(path, "model-a")["names"]
    embed.asked = []
    second = loaded.lookup(["Leeds", "Millbrook", "Hale"], embed)
    assert embed.asked == ["Millbrook"]  # the others from the file
    np.testing.assert_array_equal(second[0], first[1])
    np.testing.assert_array_equal(second[2], first[0])
    assert loaded.texts == ["Leeds", "Millbrook", "Hale"]  # exactly what was asked: Hale once


def test_gone_texts_leave_the_file(tmp_path: Path) -> None:
    vectors = TextVectors()
    vectors.lookup(["Zelda Vantrim", "Leeds"], _Embed())
    vectors.keep(["Leeds"])
    path = tmp_path / "vectors.npz"
    save_vectors(path, "m", {"names": vectors})
    assert b"Vantrim" not in path.read_bytes()
    assert load_vectors(path, "m")["names"].texts == ["Leeds"]


def test_another_models_torn_or_missing_file_is_not_read(tmp_path: Path) -> None:
    vectors = TextVectors()
    vectors.lookup(["Hale"], _Embed())
    path = tmp_path / "vectors.npz"
    save_vectors(path, "model-a", {"names": vectors})
    assert load_vectors(path, "model-b") == {}
    path.write_bytes(path.read_bytes()[:200])
    assert load_vectors(path, "model-a") == {}
    assert load_vectors(tmp_path / "none.npz", "model-a") == {}


def test_rows_of_another_dimension_are_embedded_again() -> None:
    vectors = TextVectors()
    vectors.lookup(["Hale"], _Embed(dimension=4))
    embed = _Embed(dimension=3)
    assert vectors.lookup(["Hale", "Leeds"], embed).shape == (2, 3)
    assert embed.asked == ["Leeds", "Hale", "Leeds"]  # the new text first, then all again
