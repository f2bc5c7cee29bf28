"""PLAID's sizing rules as colbert-ai 0.2.22 applies them, the ones the 21M-passage extrapolation rests on."""

from __future__ import annotations

import math

import pytest

from bench.plaid import bytes_by_kind, file_kind, kmeans_points, num_centroids, sampled_passages


@pytest.mark.parametrize("n, expected", [(1, 1), (100, 100), (10_000, 10_000), (1_000_000, 175_272),
                                         (21_015_324, 803_487)])
def test_the_centroid_sample_is_16_root_120n_capped_at_n(n, expected):
    assert sampled_passages(n) == expected


@pytest.mark.parametrize("embeddings", [1e3, 7.7e5, 1.2e6, 1.7e9])
def test_centroids_are_the_power_of_two_at_or_below_16_root_e(embeddings):
    c = num_centroids(embeddings)
    assert c & (c - 1) == 0
    assert 8 * math.sqrt(embeddings) < c <= 16 * math.sqrt(embeddings)


def test_kmeans_points_are_95_percent_of_the_sample_at_most_256_per_centroid():
    assert kmeans_points(10_000, 60.0) == pytest.approx(0.95 * 10_000 * 60.0)
    assert kmeans_points(1_000, 10_000.0) == 256 * num_centroids(1_000 * 10_000.0)  # long passages: the cap binds


@pytest.mark.parametrize("name, kind", [("0.residuals.pt", "residuals"), ("12.codes.pt", "codes"),
                                        ("ivf.pid.pt", "ivf"), ("centroids.pt", "centroids"),
                                        ("doclens.0.json", "doclens"), ("plan.json", "other")])
def test_files_are_sorted_into_their_kind(name, kind):
    assert file_kind(name) == kind


def test_bytes_are_summed_per_kind(tmp_path):
    for name, size in (("0.residuals.pt", 10), ("1.residuals.pt", 5), ("0.codes.pt", 3), ("metadata.json", 2)):
        (tmp_path / name).write_bytes(b"x" * size)
    assert bytes_by_kind(tmp_path) == {"residuals": 15, "codes": 3, "other": 2}
