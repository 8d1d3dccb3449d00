"""Research -> Attribution heatmaps in AppTest: the defaults it opens with, the maps and NMR of a shipped
policy on a scene, what changes with the cue, the experiment started from the page, and wrong files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engines.attribution import explain
from engines.attribution.jobs import EXPERIMENT
from engines.attribution.policies import PolicyFileError, ReachPolicy, load_policy, save_policy
from engines.platform import jobqueue
from engines.platform.files import area_folder
from engines.platform.uploads import UploadRefused, store_upload
from tests.apptest_driver import page_as

PAGE = "attribution_heatmaps"


def _charts(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_the_page_opens_on_the_cue_reliant_policy_and_shows_its_maps(sqlite_db):
    at = page_as(PAGE, "researcher")
    assert not at.exception, at.exception
    assert at.selectbox(key="attribution-policy").value.endswith("reach-rho1-seed0.pt")
    assert "trained at rho = 1, seed 0" in at.selectbox(key="attribution-policy").format_func(
        at.selectbox(key="attribution-policy").value)
    assert at.number_input(key="attribution-grid").value == 7 and at.number_input(key="attribution-masks").value == 300
    assert at.slider(key="attribution-pkeep").value == 0.3 and at.selectbox(key="attribution-baseline").value == "blur"
    metrics = _metrics(at)
    mass = float(metrics["NMR, contrast map (mass)"])
    # Under it, the interval and the chance level (the image's nuisance share, about 0.94 here).
    detail = next(c.value for c in at.caption if c.value.startswith("95% CI"))
    low, high = (float(v) for v in detail.split(" · ")[0].removeprefix("95% CI ").split("–"))
    assert low <= mass <= high and detail.endswith("chance 0.94"), detail
    titles = [c["layout"]["title"]["text"] for c in _charts(at)]
    assert titles[:3] == ["Frame", "ISS (upstream's map)", "ISS contrast (dISS)"]
    assert "ISS per cell (hover: 95% interval)" in titles and "Predicted action chunk (steps)" in titles
    assert any(t.startswith("Occlusion: NMR@10 ") for t in titles)
    assert any(t.startswith("Grad-CAM: NMR@10 ") for t in titles)
    # The experiment section shows the shipped run when no job has run here.
    assert at.selectbox(key="attribution-exp-shown").value is None
    assert any("NMR vs success, cue randomised (Spearman rho" in t for t in titles)
    # ISS and the baselines share the 0-1 scale; the signed contrast map keeps its own.
    charts = {c["layout"]["title"]["text"]: c for c in _charts(at)}
    assert charts["ISS (upstream's map)"]["data"][1]["zmin"] == 0 and charts["ISS (upstream's map)"]["data"][1]["zmax"] == 1
    assert "zmin" not in charts["ISS contrast (dISS)"]["data"][1]
    # Faithfulness: solid and dotted deletion curves per method, 50 points each (0..49 cells replaced).
    deletion = charts["Deletion: action change as cells are replaced"]["data"]
    assert [d["name"] for d in deletion[:2]] == ["ISS (upstream's map), most relevant first",
                                                 "ISS (upstream's map), least relevant first"]
    assert len(deletion) == 2 * 4 and len(deletion[0]["y"]) == 50 and abs(deletion[0]["y"][0]) < 1e-9


def test_a_scene_with_the_cue_removed_is_another_frame_with_other_maps(sqlite_db):
    at = page_as(PAGE, "researcher")
    before = _metrics(at)["NMR, contrast map (mass)"]
    at.selectbox(key="attribution-cue").set_value("none").run()
    assert not at.exception, at.exception
    assert _metrics(at)["NMR, contrast map (mass)"] != before
    assert "cue none" in " ".join(c.value for c in at.caption)


def test_the_episode_is_rolled_out_and_its_nmr_drawn_over_time(sqlite_db):
    at = page_as(PAGE, "researcher")
    at.button(key="attribution-episode-run").click().run()
    assert not at.exception, at.exception
    charts = {c["layout"]["title"]["text"]: c for c in _charts(at)}
    timeline = charts["NMR over the episode"]["data"]
    summary = next(m.value for m in at.markdown if "the target in" in m.value)
    steps = int(summary.split(" steps")[0].rsplit(" ", 1)[1])
    assert len(timeline[0]["y"]) == steps + 1  # one NMR per frame, the start included
    # Keyframes every 10 steps and the last one.
    keyframes = sorted(set(range(0, steps + 1, 10)) | {steps})
    assert timeline[2]["x"] == keyframes
    assert summary.endswith(f"ISS computed at steps {', '.join(map(str, keyframes))}.")
    at.slider(key="attribution-episode-step").set_value(steps).run()
    assert f"ISS at step {steps}" in [c["layout"]["title"]["text"] for c in _charts(at)]


def test_the_experiment_is_started_from_the_page_as_a_job(sqlite_db):
    at = page_as(PAGE, "researcher")
    at.multiselect(key="attribution-exp-methods").set_value(["iss"])
    at.number_input(key="attribution-exp-masks").set_value(20)
    at.number_input(key="attribution-exp-frames").set_value(1)
    at.button[[b.label for b in at.button].index("Start the experiment")].click().run()
    assert not at.exception, at.exception
    job = jobqueue.list_jobs(kind=EXPERIMENT)[0]
    assert job.params["methods"] == ["iss"] and job.params["n_masks"] == 20 and job.params["nmr_frames"] == 1
    assert job.params["policies"] == "shipped"
    assert any(s.value == f"Queued experiment #{job.id}; it appears below." for s in at.success)
    at.radio(key="attribution-exp-outcome").set_value("ood_mse").run()
    assert any("NMR vs action error, cue randomised" in c["layout"]["title"]["text"] for c in _charts(at))


def test_a_policy_trained_by_a_job_can_be_picked(sqlite_db):
    from engines.attribution.jobs import TRAIN

    job_id = jobqueue.submit_job(TRAIN, {"rho": 0.5, "seed": 4, "frames": 100, "epochs": 1, "episodes": 5})
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    at = page_as(PAGE, "researcher")
    box = at.selectbox(key="attribution-policy")
    trained = [o for o in box.options if o.startswith(f"trained by job #{job_id}: rho = 0.5, seed 4")]
    assert len(trained) == 1
    box.set_value(jobqueue.get_job(job_id).result["result_path"]).run()
    assert not at.exception, at.exception
    assert "rho=0.5" in " ".join(c.value for c in at.caption)  # the scene follows the policy's rho


def _png(size=(128, 96), color=(255, 0, 0)) -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def test_an_uploaded_policy_and_image_are_stored_and_loaded_from_there(sqlite_db, tmp_path):
    path = save_policy(ReachPolicy(), tmp_path / "good.pt", {})
    at = page_as(PAGE, "researcher")
    at.radio(key="attribution-policy-source").set_value("upload").run()
    at.file_uploader(key="attribution-policy-file").upload("../../good.pt", path.read_bytes()).run()
    at.radio(key="attribution-frame-source").set_value("image").run()
    at.file_uploader(key="attribution-image").upload("red.png", _png()).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert "Predicted first move" in _metrics(at)
    assert "uploaded red.png, resized to 64 x 64" in " ".join(c.value for c in at.caption)
    stored = sorted(p.suffix for p in area_folder("uploads", "attribution").iterdir())
    assert stored == [".png", ".pt"]  # kept under server-chosen names, never the browser's
    assert list(tmp_path.rglob("good.pt")) == [path]


@pytest.mark.parametrize(("name", "data", "message"), [
    ("empty.pt", b"", "empty.pt: the file is empty."),
    ("code.pt", b"import os; os.system('x')", "code.pt: not a PyTorch weights file"),
])
def test_an_empty_or_false_weights_upload_is_a_clear_error_not_a_crash(sqlite_db, name, data, message):
    at = page_as(PAGE, "researcher")
    at.radio(key="attribution-policy-source").set_value("upload").run()
    at.file_uploader(key="attribution-policy-file").upload(name, data).run()
    assert not at.exception, at.exception
    assert message in " ".join(e.value for e in at.error)
    assert any("Choose a policy and a frame" in i.value for i in at.info)
    assert not list(area_folder("uploads", "attribution").glob("*.pt"))


def test_uploaded_weights_of_another_model_and_a_non_image_are_named_in_the_error(data_dir, tmp_path):
    import torch

    torch.save({"layer.weight": torch.zeros(2)}, tmp_path / "other.pt")
    upload = store_upload((tmp_path / "other.pt").read_bytes(), label="mine.pt", kind="torch", area="attribution")
    with pytest.raises(PolicyFileError, match=r"^mine\.pt: these weights are not the reach-cnn-v1 policy"):
        load_policy(upload.path, label=upload.label)
    good = store_upload(save_policy(ReachPolicy(), tmp_path / "good.pt", {}).read_bytes(), label="good.pt",
                        kind="torch", area="attribution")
    model, meta = load_policy(good.path, label=good.label)
    assert meta == {} and isinstance(model, ReachPolicy)
    with pytest.raises(UploadRefused, match=r"^notes\.png: not a PNG or JPEG image"):
        store_upload(b"plain text, not a picture", label="notes.png", kind="image", area="attribution")


def test_files_outside_the_owned_folders_are_not_opened(data_dir, tmp_path):
    from engines.platform.files import FileRefused

    path = save_policy(ReachPolicy(), tmp_path / "good.pt", {})
    (tmp_path / "red.png").write_bytes(_png())
    with pytest.raises(FileRefused, match="the policy's weights: .* is outside the folders"):
        load_policy(path)
    with pytest.raises(FileRefused, match="the frame's image: .* is outside the folders"):
        explain.image_frame(tmp_path / "red.png", "red.png")
    link = area_folder("uploads", "attribution") / "link.pt"
    link.parent.mkdir(parents=True)
    link.symlink_to(path)  # a link out of the owned folders
    with pytest.raises(FileRefused, match="is outside the folders"):
        load_policy(link)


def test_an_uploaded_picture_becomes_a_frame_of_the_policy_input_size(data_dir):
    upload = store_upload(_png(), label="red.png", kind="image", area="attribution")
    frame = explain.image_frame(upload.path, upload.label)
    assert frame.image.shape == (3, 64, 64) and frame.relevance is None
    assert np.allclose(frame.image[0], 1.0) and np.allclose(frame.image[1:], 0.0)
    result = explain.explain_frame(ReachPolicy(), frame, n_masks=20)
    assert result.nmr_mass is None and explain.nmr_text(result.nmr_mass) == "n/a"


def test_the_page_loads_policies_onto_the_device_the_setting_names(sqlite_db, monkeypatch):
    # HAI_DEVICE=cuda: the page must ask for the GPU (the loader is replaced by one that records the
    # device asked for and loads on the CPU, so this runs on any machine).
    from engines.attribution import policies
    from engines.platform import settings

    monkeypatch.setenv("HAI_DEVICE", "cuda")
    settings.reset_settings()
    real_load = policies.load_policy
    asked = []

    def recording_load(path, *, label=None, device=None):
        asked.append(str(device))
        return real_load(path, label=label, device="cpu")

    monkeypatch.setattr(policies, "load_policy", recording_load)
    at = page_as(PAGE, "researcher")
    assert not at.exception, at.exception
    assert asked and set(asked) == {"cuda"}
