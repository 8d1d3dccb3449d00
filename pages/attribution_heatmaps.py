"""Research: ISS attribution heatmaps and the Nuisance Mass Ratio (Zhang et al., ICML 2026).

Pick a policy (the shipped reaching policies, one a job trained, or an uploaded weights file) and
a frame (a scene of the reaching task, or an uploaded image; uploads are kept through the
platform's upload rule and loaded from there, weights as tensors only); the page shows the policy's action, its ISS map with
intervals, NMR against chance, and the standard attribution methods beside it. Below: the
experiment across policies (does in-distribution NMR predict failure when the spurious cue is
randomised?), from the shipped run or from a job started here. Policies run on the ``HAI_DEVICE``
setting's device (CUDA when present, by default).
"""

import streamlit as st

from engines.attribution import explain, plots
from engines.attribution import jobs as attribution_jobs
from engines.attribution.configs import METHODS
from engines.attribution.policies import PolicyFileError, load_policy
from engines.attribution.policy_set import shipped_policies
from engines.attribution.replacements import REPLACEMENTS
from engines.attribution.run_files import RunFileError
from engines.platform import jobqueue
from engines.platform.config_schema import field_info
from engines.platform.files import FileRefused
from engines.platform.torch_device import resolve_device
from pages import _access as access
from pages import _research_widgets as widgets
from pages._upload import file_input, refuse_upload

PAGE = {"title": "Attribution heatmaps", "group": "Research", "roles": ["researcher"],
        "icon": ":material/center_focus_strong:", "order": 60}
CUES = {"normal": "as in training (agrees with the target with probability rho)",
        "random": "randomised (out of distribution)", "none": "absent"}


@st.cache_resource(max_entries=16, show_spinner=False)
def cached_policy(path: str, device: str):
    """A policy loads once per process and device, not on every rerun."""
    return load_policy(path, device=device)


@st.cache_data(max_entries=8, show_spinner=False)
def cached_episode(policy_key: str, _model, frame_key: str, _frame, stride: int, grid: int, n_masks: int,
                   p_keep: float, baseline: str, seed: int):
    return explain.explain_episode(_model, _frame.scene, time_stride=stride, grid=grid, n_masks=n_masks,
                                   p_keep=p_keep, baseline=baseline, seed=seed)


@st.cache_data(max_entries=32, show_spinner=False)
def cached_explanation(policy_key: str, _model, frame_key: str, _frame, baselines: tuple, grid: int, n_masks: int,
                       p_keep: float, baseline: str, seed: int):
    return explain.explain_frame(_model, _frame, baselines=baselines, grid=grid, n_masks=n_masks, p_keep=p_keep,
                                 baseline=baseline, seed=seed)


identity = access.require_role("researcher")
st.title("Attribution heatmaps")
st.caption("Which image regions drive a visuomotor policy's actions? ISS blurs random coarse regions and credits "
           "each pixel with the change of the predicted action; NMR is the share of that credit outside the task "
           "(agent and target). A high NMR predicts failure when the spurious cue changes "
           "(Zhang et al., “Embodied Interpretability”, ICML 2026).")

# 1 · POLICY

st.header("1 · Policy")
try:
    shipped = shipped_policies()
except (FileRefused, RunFileError) as exc:
    st.error(f"The shipped policy set does not read: {exc}")
    shipped = []
choices = {row["path"]: (f"reaching policy trained at rho = {row['rho']:g}, seed {row['seed']} "
                         f"(success {row['evaluation']['normal']['success']:.0%} in distribution, "
                         f"{row['evaluation']['random']['success']:.0%} with the cue randomised)") for row in shipped}
choices |= {job.result["result_path"]: (f"trained by job #{job.id}: rho = {job.result['rho']:g}, seed {job.result['seed']} "
                                        f"(success {job.result['evaluation']['normal']['success']:.0%} in distribution, "
                                        f"{job.result['evaluation']['random']['success']:.0%} with the cue randomised)")
            for job in attribution_jobs.finished_training_jobs()}
source = st.radio("Policy", ["shipped", "upload"], horizontal=True, key="attribution-policy-source",
                  format_func={"shipped": "a shipped or trained reaching policy", "upload": "a weights file (.pt)"}.get)
model = meta = None
policy_key = ""
if source == "shipped":
    if not choices:
        st.warning("No shipped policies in assets/attribution/policies and none trained by a job: run "
                   "`python -m engines.attribution train-set`.")
    else:
        default = next((i for i, row in enumerate(shipped) if (row["rho"], row["seed"]) == (1.0, 0)), 0)
        path = st.selectbox("Reaching policy", list(choices), index=default, format_func=choices.get,
                            key="attribution-policy")
        try:
            model, meta = cached_policy(path, str(resolve_device()))
        except (FileRefused, PolicyFileError, RunFileError) as exc:
            st.error(str(exc))
        else:
            policy_key = path
else:
    upload = file_input("Weights of a reach-cnn policy (as `python -m engines.attribution train` writes them)",
                        kind="torch", area="attribution", key="attribution-policy-file")
    if upload is not None:
        try:  # the upload is kept under a server-chosen name; loading it is still weights_only
            model, meta = load_policy(upload.path, label=upload.label, device=resolve_device())
        except (FileRefused, PolicyFileError, RunFileError) as exc:
            refuse_upload(upload, str(exc))
        else:
            policy_key = f"upload:{upload.sha256}"
rho_trained = float((meta or {}).get("train", {}).get("rho", 0.95))

# 2 · FRAME

st.header("2 · Frame")
frame_source = st.radio("Frame", ["scene", "image"], horizontal=True, key="attribution-frame-source",
                        format_func={"scene": "a scene of the reaching task", "image": "an uploaded image"}.get)
frame = None
if frame_source == "scene":
    left, right = st.columns(2)
    scene_seed = left.number_input("Scene number", 0, 100_000, 0, key="attribution-scene")
    cue = right.selectbox("The green cue", list(CUES), format_func=CUES.get, key="attribution-cue")
    frame = explain.scene_frame(rho_trained, int(scene_seed), cue)
    frame_key = f"scene:{rho_trained}:{scene_seed}:{cue}"
else:
    picture = file_input("An image (PNG or JPEG); it is resized to 64 x 64, and NMR needs a relevance mask, "
                         "so only the maps are shown", kind="image", area="attribution", key="attribution-image")
    if picture is not None:
        try:
            frame = explain.image_frame(picture.path, picture.label)
        except (FileRefused, explain.ImageFileError) as exc:
            st.error(str(exc))
        frame_key = f"image:{picture.sha256}"

# 3 · SETTINGS AND MAPS

st.header("3 · Heatmaps")
with st.form("attribution-settings"):
    left, middle, right = st.columns(3)
    grid = left.number_input("Grid cells per side", 2, 16, 7, key="attribution-grid",
                             help="Upstream's default: 7 x 7 coarse regions.")
    n_masks = middle.number_input("Masks", 20, 5000, 300, step=50, key="attribution-masks",
                                  help="More masks: narrower intervals, longer wait (upstream: 500).")
    p_keep = right.slider("Share of cells kept per mask", 0.1, 0.9, 0.3, 0.05, key="attribution-pkeep")
    left, right = st.columns(2)
    replacement = left.selectbox("Replacement of a dropped cell", list(REPLACEMENTS), key="attribution-baseline",
                                 help="Blur is upstream's; mean and noisy imputation check that a map does not "
                                      "depend on it.")
    seed = right.number_input("Seed (fixes the masks)", 0, 10_000, 0, key="attribution-seed")
    compared = st.multiselect("Compare with", list(explain.BASELINES), default=["occlusion", "integrated_gradients",
                                                                                "grad_cam"],
                              format_func=lambda m: plots.METHOD_TITLES.get(m, m), key="attribution-compare")
    st.form_submit_button("Compute the maps", type="primary")

if model is None or frame is None:
    st.info("Choose a policy and a frame above to see its maps.")
else:
    with st.spinner("Masking and running the policy…"):
        result = cached_explanation(policy_key, model, frame_key, frame, tuple(compared), int(grid), int(n_masks),
                                    float(p_keep), replacement, int(seed))
    st.caption(f"Frame: {frame.source}. ISS took {result.seconds['iss']:.2f} s for {int(n_masks)} masks.")
    metrics = st.columns(3)
    for column, label, value in ((metrics[0], "NMR, contrast map (mass)", result.nmr_mass),
                                 (metrics[1], "NMR@10, ISS map (upstream)", result.nmr_at_k)):
        column.metric(label, explain.nmr_point(value))
        column.caption(explain.nmr_detail(value))
    metrics[2].metric("Predicted first move", f"({result.action[0][0]:+.2f}, {result.action[0][1]:+.2f}) steps")
    if frame.relevance is not None:
        st.caption("NMR is the share of attribution outside the task-relevant pixels (dotted outline: agent and "
                   "target); chance is that share of the image's pixels. Below chance: the policy reads the task; "
                   "near or above: it leans on something else, such as the green cue.")
    columns = st.columns(3)
    columns[0].plotly_chart(plots.frame_figure(frame.image, frame.relevance), key="attribution-frame-figure")
    columns[1].plotly_chart(plots.heatmap_figure(frame.image, result.iss_map, title=plots.METHOD_TITLES["iss"],
                                                 relevance=frame.relevance), key="attribution-iss-figure")
    columns[2].plotly_chart(plots.heatmap_figure(frame.image, result.contrast_map,
                                                 title=plots.METHOD_TITLES["iss_contrast"], relevance=frame.relevance,
                                                 shared_scale=False), key="attribution-contrast-figure")
    figures = [("grid", plots.grid_figure(result.grid_map, result.ci_low, result.ci_high)),
               ("action", plots.action_figure(result.action))]
    for method, pixel_map in result.baselines.items():
        title = f"{plots.METHOD_TITLES.get(method, method)}: NMR@10 {explain.nmr_text(result.baseline_nmr[method])}"
        figures.append((method, plots.heatmap_figure(frame.image, pixel_map, title=title, relevance=frame.relevance)))
    for start in range(0, len(figures), 3):
        for column, (name, figure) in zip(st.columns(3), figures[start:start + 3], strict=False):
            column.plotly_chart(figure, key=f"attribution-{name}-figure")
    st.caption("ISS and the baselines are min-max normalised to one 0–1 colour scale (their units differ); the "
               "contrast map keeps its own signed scale.")
    st.subheader("Faithfulness")
    st.caption(f"Cells replaced ({replacement}) in each map's order: a faithful map's most relevant cells change the "
               "action most. Try another replacement above: blur is ISS's own, and favours it.")
    left, right = st.columns([3, 2])
    left.plotly_chart(plots.faithfulness_figure(result.curves), key="attribution-faithfulness-figure")
    right.dataframe(plots.faithfulness_frame(result.curves), hide_index=True, width="stretch")

    if frame.scene is not None:
        st.subheader("Over an episode")
        st.caption("The policy acts in closed loop from this scene; ISS is computed every few steps and interpolated "
                   "in between, as upstream does.")
        stride = st.number_input("Compute ISS every … steps", 1, 30, 10, key="attribution-stride")
        if st.button("Roll out and map the episode", key="attribution-episode-run"):
            st.session_state["attribution-episode"] = (policy_key, frame_key, int(stride))
        if st.session_state.get("attribution-episode") == (policy_key, frame_key, int(stride)):
            with st.spinner("Rolling out and masking every keyframe…"):
                episode = cached_episode(policy_key, model, frame_key, frame, int(stride), int(grid), int(n_masks),
                                         float(p_keep), replacement, int(seed))
            st.write(f"{'Reached' if episode.success else 'Did not reach'} the target in {episode.steps} steps; "
                     f"ISS computed at steps {', '.join(map(str, episode.keyframes))}.")
            st.plotly_chart(plots.episode_figure(episode.nmr_mass, episode.nmr_at_k, episode.keyframes, episode.chance),
                            key="attribution-episode-figure")
            step = st.slider("Step", 0, episode.steps, 0, key="attribution-episode-step") if episode.steps else 0
            left, right = st.columns(2)
            left.plotly_chart(plots.frame_figure(episode.frames[step], episode.relevance[step], title=f"Step {step}"),
                              key="attribution-episode-frame")
            right.plotly_chart(plots.heatmap_figure(episode.frames[step], episode.pixel_maps[step],
                                                    title=f"ISS at step {step}", relevance=episode.relevance[step]),
                               key="attribution-episode-map")

# 4 · EXPERIMENT

st.header("4 · Does NMR predict failure out of distribution?")
st.caption("Each policy's NMR on held-out in-distribution frames against its success with the cue randomised. "
           "The paper reports Spearman r = -0.77 across VLA policies; here the shipped reaching policies.")
with st.form("attribution-experiment"):
    left, right = st.columns(2)
    methods = left.multiselect("Methods", list(METHODS), default=["iss", "iss_contrast", "occlusion"],
                               format_func=lambda m: plots.METHOD_TITLES.get(m, m), key="attribution-exp-methods")
    policies = right.radio("Policies", ["shipped", "train"], key="attribution-exp-policies",
                           format_func={"shipped": "the shipped set", "train": "train all anew (minutes)"}.get)
    # The job's own bounds and defaults (declared once, in ExperimentConfig).
    experiment = field_info(attribution_jobs.ExperimentParams)
    masks, nmr_frames = experiment["n_masks"], experiment["nmr_frames"]
    exp_masks = left.number_input("Masks per frame", int(masks.ge), int(masks.le), masks.default, step=50,
                                  key="attribution-exp-masks")
    frames = right.number_input("Frames per policy", int(nmr_frames.ge), int(nmr_frames.le), nmr_frames.default,
                                key="attribution-exp-frames")
    if st.form_submit_button("Start the experiment"):
        try:
            job_id = jobqueue.submit_job(attribution_jobs.EXPERIMENT, {
                "methods": methods, "policies": policies, "n_masks": int(exp_masks), "nmr_frames": int(frames)},
                submitted_by=identity.user_id)
        except jobqueue.JobError as exc:
            st.error(str(exc))
        else:
            st.success(f"Queued experiment #{job_id}; it appears below.")


@st.fragment(run_every="2s")
def experiment_jobs() -> None:
    jobs = attribution_jobs.attribution_jobs()
    widgets.jobs_table(plots.jobs_frame(jobs), "No attribution job yet: the figures below are the shipped run's.")


experiment_jobs()
finished = [j for j in attribution_jobs.attribution_jobs() if j.kind == attribution_jobs.EXPERIMENT
            and j.status == "succeeded"]
runs = {None: "the shipped run (assets/attribution/experiment.json)"} | {
    j.id: f"experiment #{j.id}: {j.result.get('summary', '')}" for j in finished}
shown = st.selectbox("Results of", list(runs), index=len(runs) - 1 if finished else 0, format_func=runs.get,
                     key="attribution-exp-shown")
try:
    experiment = attribution_jobs.read_experiment(shown)
except ValueError as exc:
    st.error(str(exc))
else:
    st.write(experiment.get("summary", ""))
    available = list(experiment.get("correlations", {}))
    left, right = st.columns(2)
    method = left.selectbox("Method", available, format_func=lambda m: plots.METHOD_TITLES.get(m, m),
                            key="attribution-exp-method")
    outcome = right.radio("Against", list(plots.OUTCOMES), format_func=plots.OUTCOMES.get, horizontal=True,
                          key="attribution-exp-outcome")
    if method:
        st.plotly_chart(plots.experiment_scatter(experiment, method, outcome), key="attribution-exp-scatter")
    st.dataframe(plots.correlation_frame(experiment), hide_index=True, width="stretch")
    with st.expander("Per policy"):
        st.dataframe(plots.experiment_frame(experiment), hide_index=True, width="stretch")
