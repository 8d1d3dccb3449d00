"""The counting CNN: output contract, ECE on analytic cases, a --quick training run, the shipped weights."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import torch

from engines.collab.counter import (
    DEFAULT_WEIGHTS,
    ShapeCounter,
    load_counter,
    n_parameters,
    predict_proba,
    save_counter,
)
from engines.collab.counter_config import QUICK, CounterConfig, TrainConfig
from engines.collab.counter_training import (
    EvalMetrics,
    add_arguments,
    expected_calibration_error,
    fit_temperature,
    reliability_bins,
    reproduce_command,
    run,
    train_counter,
)
from engines.collab.shapes import N_LABELS, generate_batch

ASSETS = DEFAULT_WEIGHTS.parent


def _one_hot_probs(confidence: float, predicted: int, n: int) -> np.ndarray:
    """n rows with ``confidence`` on ``predicted`` and the rest spread over the other labels."""
    probs = np.full((n, N_LABELS), (1 - confidence) / (N_LABELS - 1))
    probs[:, predicted] = confidence
    return probs


# ---------------------------------------------------------------- ECE on hand-made cases
def test_ece_is_zero_when_calibrated():
    # Confidence 0.6 and 6 of 10 correct: accuracy equals confidence in the only bin.
    probs = _one_hot_probs(0.6, predicted=3, n=10)
    labels = np.array([3] * 6 + [4] * 4)
    assert expected_calibration_error(probs, labels) == pytest.approx(0.0, abs=1e-12)
    # Certain and always right.
    assert expected_calibration_error(_one_hot_probs(1.0, 2, 5), np.full(5, 2)) == pytest.approx(0.0, abs=1e-12)


def test_ece_known_miscalibration():
    # Half the cases at confidence 0.9, all correct (gap 0.1); half at 0.6, none correct (gap 0.6).
    probs = np.vstack([_one_hot_probs(0.9, 1, 4), _one_hot_probs(0.6, 1, 4)])
    labels = np.array([1] * 4 + [0] * 4)
    assert expected_calibration_error(probs, labels) == pytest.approx(0.5 * 0.1 + 0.5 * 0.6)
    # One bin, overconfident: confidence 0.9, accuracy 0.5.
    assert expected_calibration_error(_one_hot_probs(0.9, 0, 4), np.array([0, 0, 1, 1])) == pytest.approx(0.4)


def test_ece_bins_are_right_closed():
    # 0.6 = 9/15 is the top of bin 8, 0.61 falls in bin 9: with 2 bins' worth of separate gaps the
    # ECE differs from what one merged bin would give.
    probs = np.vstack([_one_hot_probs(0.6, 0, 2), _one_hot_probs(0.61, 0, 2)])
    labels = np.array([0, 1, 0, 0])
    separate = 0.5 * abs(0.5 - 0.6) + 0.5 * abs(1.0 - 0.61)
    assert expected_calibration_error(probs, labels) == pytest.approx(separate)


def test_eval_metrics_fields():
    probs = np.vstack([_one_hot_probs(0.8, 2, 3), _one_hot_probs(0.8, 5, 1)])
    m = EvalMetrics.of(probs, np.array([2, 2, 3, 5]))
    assert m.n == 4 and m.accuracy == 0.75 and m.mean_confidence == 0.8
    assert m.mean_abs_error == pytest.approx(0.25)


def test_fit_temperature_recovers_known_scale():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(4000, N_LABELS, generator=generator) * 2
    labels = torch.multinomial(torch.softmax(logits, 1), 1, generator=generator).squeeze(1)
    # Labels drawn from softmax(logits): logits * 3 are overconfident by a temperature of 3.
    assert fit_temperature(logits * 3, labels) == pytest.approx(3.0, rel=0.1)


# ---------------------------------------------------------------- the network
def test_output_is_a_distribution_over_counts():
    torch.manual_seed(0)
    model = ShapeCounter().eval()
    assert n_parameters(model) < 500_000
    images = generate_batch(0, 5).images
    probs = predict_proba(model, images)
    assert probs.shape == (5, N_LABELS)
    assert np.allclose(probs.sum(axis=1), 1.0) and (probs >= 0).all()
    assert predict_proba(model, images[0]).shape == (1, N_LABELS)
    with torch.no_grad():
        logits = model(torch.from_numpy(images[:2].astype(np.float32) / 255).unsqueeze(1))
    assert logits.shape == (2, N_LABELS)


def test_predict_proba_runs_the_network_with_tf32_off_and_restores_it():
    # TF32 (the default for cuDNN convolutions on recent GPUs) moves these probabilities by about 1e-3;
    # the shipped scores and the conformal thresholds on them are float32 values.
    from engines.platform.torch_device import tf32_enabled

    model = ShapeCounter(CounterConfig(channels=(4, 8, 8), density=4, hidden=8)).eval()
    seen = []
    model.register_forward_pre_hook(lambda module, args: seen.append(tf32_enabled()))
    assert tf32_enabled()
    predict_proba(model, generate_batch(0, 3).images)
    assert seen == [False] and tf32_enabled()


def test_the_training_run_scores_its_held_out_images_with_tf32_off():
    from engines.collab import counter_training
    from engines.platform.torch_device import tf32_enabled

    model = ShapeCounter(CounterConfig(channels=(4, 8, 8), density=4, hidden=8))
    seen = []
    model.register_forward_pre_hook(lambda module, args: seen.append(tf32_enabled()))
    counter_training._logits(model, generate_batch(0, 3).images, torch.device("cpu"))
    assert seen == [False] and tf32_enabled()


def test_the_training_device_auto_follows_the_setting_and_the_command_names_the_device(monkeypatch, tmp_path):
    from engines.collab import counter_training

    monkeypatch.setattr(counter_training, "resolve_device",
                        lambda device=None: torch.device("cpu") if device in (None, "auto") else torch.device(device))
    command = reproduce_command(TrainConfig(device="auto"), tmp_path / "counter.pt", quick=True)
    assert "--device cpu" in command and "--device auto" not in command  # the device it ran on, for a rerun


def test_predict_proba_rejects_non_uint8():
    with pytest.raises(ValueError, match="uint8"):
        predict_proba(ShapeCounter(), np.zeros((1, 64, 64), dtype=np.float32))


def test_save_and_load_roundtrip(tmp_path):
    torch.manual_seed(1)
    model = ShapeCounter(CounterConfig(channels=(4, 8, 8), density=4, hidden=8)).eval()
    model.temperature.fill_(1.7)
    path = save_counter(model, tmp_path / "tiny.pt")
    loaded = load_counter(path)
    assert loaded is load_counter(path)  # cached per path and device
    assert not loaded.training and float(loaded.temperature) == pytest.approx(1.7)
    images = generate_batch(1, 3).images
    assert np.allclose(predict_proba(loaded, images), predict_proba(model, images), atol=1e-6)


def test_config_validation():
    with pytest.raises(ValueError):
        CounterConfig(image_size=62)
    with pytest.raises(ValueError):
        CounterConfig(dropout=1.0)


# ---------------------------------------------------------------- the training command
def test_quick_training_run(tmp_path):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    out = tmp_path / "model" / "counter.pt"
    result = run(parser.parse_args(["--quick", "--out", str(out), "--no-progress", "--train-difficulty", "0.2,0.9"]))
    assert "summary" in result and "accuracy" in result["summary"]
    report = json.loads((tmp_path / "model" / "counter_report.json").read_text())
    for name in ("overall", "easy", "medium", "hard"):
        assert {"accuracy", "ece", "n"} <= set(report["metrics"][name])
    assert report["quick"] and "--quick" in report["command"] and report["code_version"]
    assert report["train_difficulty"] == "uniform on [0.2, 0.9] (shapes.config_for_difficulty)"
    assert "--train-difficulty 0.2,0.9" in report["command"]
    probs = predict_proba(load_counter(out, device="cpu"), generate_batch(2, 4).images)
    assert probs.shape == (4, N_LABELS)
    scores = np.load(tmp_path / "model" / "counter_scores.npz")
    assert scores["probs"].shape == (scores["labels"].shape[0], N_LABELS)
    # The saved scores are the model's probabilities on generate_batch(seed, n).
    regenerated = generate_batch(int(scores["seed"]), 8)
    assert np.array_equal(regenerated.counts, scores["labels"][:8])
    # Trained and scored on the CPU (the TrainConfig default): compared there, exactly to float32 rounding.
    assert np.allclose(predict_proba(load_counter(out, device="cpu"), regenerated.images), scores["probs"][:8],
                       atol=1e-4)


def test_training_reports_progress_per_epoch_and_stops_when_the_callback_raises(tmp_path):
    class Stop(Exception):
        pass

    calls = []

    def progress(done, total, message=""):
        assert total == 1  # shares of the whole run
        calls.append((done, message))
        if message.startswith("epoch 1/2"):
            raise Stop  # what a cancelled background job does

    config = TrainConfig(**{**QUICK, "epochs": 2}, train_difficulty=(0.0, 0.5))
    with pytest.raises(Stop):
        train_counter(config, tmp_path / "counter.pt", quick=True, progress=progress)
    assert list(tmp_path.iterdir()) == []  # nothing written
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions) and 0 < fractions[-1] < 1
    assert calls[-1][1].startswith("epoch 1/2: loss") and sum(m == "" for _, m in calls) == QUICK["train_size"] // 64
    assert "--train-difficulty 0,0.5" in reproduce_command(config, tmp_path / "counter.pt", quick=True)
    assert "--train-difficulty" not in reproduce_command(TrainConfig(), tmp_path / "counter.pt", quick=False)
    with pytest.raises(ValueError, match="train_difficulty"):
        TrainConfig(train_difficulty=(0.6, 0.2))


def test_reliability_bins_give_the_ece():
    probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.4, 0.6], [0.3, 0.7]])
    labels = np.array([0, 1, 1, 1])
    bins = reliability_bins(probs, labels, n_bins=5)  # confidences 0.9, 0.8, 0.6, 0.7 in bins (lo, hi]
    assert bins["count"].tolist() == [0, 0, 1, 2, 1]
    filled = bins["count"] > 0
    np.testing.assert_allclose(bins["confidence"][filled], [0.6, 0.75, 0.9])
    np.testing.assert_allclose(bins["accuracy"][filled], [1.0, 0.5, 1.0])  # 0.8 predicts 0, the truth is 1
    ece = (bins["count"][filled] * np.abs(bins["accuracy"][filled] - bins["confidence"][filled])).sum() / 4
    assert ece == pytest.approx(0.25) == pytest.approx(expected_calibration_error(probs, labels, n_bins=5))


# ---------------------------------------------------------------- the shipped model
needs_weights = pytest.mark.skipif(not DEFAULT_WEIGHTS.is_file(), reason="assets/collab/counter.pt not shipped")


@needs_weights
def test_shipped_model_is_good_on_easy_and_worse_on_hard():
    model = load_counter()
    accuracy = {}
    for name in ("easy", "hard"):
        batch = generate_batch(777, 200, name)  # a seed the training never used
        accuracy[name] = float((predict_proba(model, batch.images).argmax(1) == batch.counts).mean())
    assert accuracy["easy"] > 0.9
    assert accuracy["hard"] < accuracy["easy"] - 0.15


@needs_weights
def test_shipped_files_are_small_and_consistent():
    assert DEFAULT_WEIGHTS.stat().st_size < 2_000_000
    scores_path = ASSETS / "counter_scores.npz"
    assert scores_path.stat().st_size < 1_000_000
    scores = np.load(scores_path)
    n = len(scores["labels"])
    assert n >= 4000 and scores["probs"].shape == (n, N_LABELS) and scores["probs"].dtype == np.float32
    assert scores["labels"].dtype == np.int64 and scores["difficulty"].dtype == np.float32
    assert np.allclose(scores["probs"].sum(1), 1.0, atol=1e-4)
    assert 0.0 <= scores["difficulty"].min() and scores["difficulty"].max() <= 1.0
    # The scores are the shipped model's probabilities on generate_batch(seed, n).
    first = generate_batch(int(scores["seed"]), 16)
    assert np.array_equal(first.counts, scores["labels"][:16])
    # The shipped scores were made on the CPU: compared there (a GPU's copy: test_the_probabilities_on_cuda_...).
    assert np.allclose(predict_proba(load_counter(device="cpu"), first.images), scores["probs"][:16], atol=1e-4)
    report = json.loads((ASSETS / "counter_report.json").read_text())
    assert report["metrics"]["overall"]["n"] == n and not report["quick"]
    assert report["metrics"]["easy"]["accuracy"] > report["metrics"]["hard"]["accuracy"]
    # Trained from a committed tree (the version names a commit), on the range its config states.
    assert not report["code_version"].endswith("-dirty")
    assert report["train_difficulty"] == "uniform on [{:g}, {:g}] (shapes.config_for_difficulty)".format(
        *report["train_config"]["train_difficulty"])


# ---------------------------------------------------------------- on a GPU


@pytest.mark.cuda
def test_the_probabilities_on_cuda_are_the_cpus_and_the_shipped_scores():
    images = generate_batch(5, 64).images
    on_cpu = predict_proba(load_counter(device="cpu"), images)
    on_gpu = predict_proba(load_counter(device="cuda"), images)
    assert np.abs(on_gpu - on_cpu).max() <= 1e-5  # TF32 off inside predict_proba: float32 on both sides
    scores = np.load(ASSETS / "counter_scores.npz")
    first = generate_batch(int(scores["seed"]), 16)
    assert np.allclose(predict_proba(load_counter(device="cuda"), first.images), scores["probs"][:16], atol=1e-4)


@pytest.mark.cuda
def test_training_on_cuda_is_bit_reproducible(tmp_path):
    config = TrainConfig(**QUICK, device="cuda")
    train_counter(config, tmp_path / "a.pt", quick=True)
    train_counter(config, tmp_path / "b.pt", quick=True)
    first, again = (torch.load(tmp_path / name, weights_only=True)["state_dict"] for name in ("a.pt", "b.pt"))
    assert all(torch.equal(first[key], again[key]) for key in first)
