"""Research: HOI-Edit comparisons (HOI-Edit, ICML 2026).

Compares editing methods on the HOI-Edit benchmark of human–object-interaction edits: HOI-Eval's
leaderboard in the paper's layout, an item browser with every method's edit, its scores and the
judge's reasoning (an I2V method's frame strip and SCPE trace too), and the arena's ratings from
participants' votes, with what each arena study compares. The shipped demo is synthetic; name a
benchmark folder registered under the data folder's datasets/hoi/ in the sidebar to use the page
for real. Jobs started here read the benchmark and write into their own result folders, which the
page reads with it.

What a person waits for is kept small on a benchmark of hundreds of items and many methods
(``bench/hoi_ui.py``): only the open tab runs (``st.tabs(on_change="rerun")``: the leaderboard's
figures, the arena's bootstrap and the jobs' refresh run only while their tab is shown); paging
through the item browser reruns only the browser (a fragment); the folder is read once per change
(``cached_workspace``, keyed by the folders' modification times), the item order once per filter,
each image shrunk and JPEG-encoded once (``browse.THUMBNAILS``, sent as bytes: a Pillow image is
encoded again as PNG on every rerun), and a vote log rated once per content.
"""

import hashlib
from pathlib import Path

import streamlit as st

from engines.hoi import arena, backends, browse, plots
from engines.hoi import jobs as hoi_jobs
from engines.hoi.benchmark import BenchmarkFormatError
from engines.hoi.folders import FileRefused, benchmark_folder, shown
from engines.hoi.methods import MethodsFileError
from engines.hoi.ratings import rate, win_rate_matrix
from engines.hoi.votes import VoteFormatError, VoteLog, read_votes
from engines.platform import jobqueue, study_admin
from engines.platform.files import area_folder
from engines.platform.panels import LinkError
from engines.platform.runtime import StudyError
from pages import _access as access
from pages import _research_widgets as widgets

PAGE = {"title": "HOI-Edit", "group": "Research", "roles": ["researcher"], "icon": ":material/compare:",
        "order": 80}
DEMO = "shipped/hoi/demo"
TABS = ("Leaderboard", "Item browser", "Arena results", "Run")
FOLDER_VOTES = "the folder's votes.jsonl"
EDIT_SIZE, SOURCE_SIZE, FRAME_SIZE = 320, 480, 160  # thumbnail sizes, pixels


@st.cache_resource(max_entries=4, show_spinner=False)
def cached_workspace(root: str, layers: tuple[str, ...], stamp: float) -> browse.Workspace:
    return browse.open_workspace(root, layers)


def folder_stamp(roots: list[Path]) -> float:
    """Changes when a folder's records or method folders change, so the cache reads them again."""
    paths = [p for root in roots
             for p in (root, *root.glob("records/*.json"), *root.glob("*_frames"), *root.glob("data/*_frames"))]
    return max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)


@st.cache_data(max_entries=64, show_spinner=False)
def item_keys(root: str, layers: tuple[str, ...], stamp: float, split: str, level_or_tag: str | None,
              methods: tuple[str, ...], sort: str) -> list[str]:
    """The keys of the split's items under the filter, in the chosen order: sorting by the methods'
    scores or their disagreement visits every item's records, so once per filter, not per page."""
    workspace = cached_workspace(root, layers, stamp)
    return [item.key for item in browse.list_items(workspace, split, level_or_tag=level_or_tag,
                                                     methods=list(methods), sort=sort)]


@st.cache_resource(max_entries=8, show_spinner=False)
def leaderboard_view(root: str, layers: tuple[str, ...], stamp: float, methods: tuple[str, ...], split: str):
    """The paper's table and its figure, and the split's per-tag rows and figure, built once per
    folder state and choice of methods (the figures are only read by the page)."""
    workspace = cached_workspace(root, layers, stamp)
    rows = browse.leaderboard_rows(workspace, list(methods))
    tag_rows = [r for r in browse.tag_rows(workspace, list(methods)) if r["split"] == split]
    if not rows:
        return rows, None, None, tag_rows, None
    return (rows, plots.leaderboard_frame(rows), plots.leaderboard_figure(rows), tag_rows,
            plots.tag_figure(tag_rows))


@st.cache_data(max_entries=8, show_spinner=False)
def folder_votes(path: str, modified_ns: int, size: int) -> VoteLog:  # noqa: ARG001 - cache key
    """The folder's vote log, read again only when the file changes."""
    return read_votes(path)


@st.cache_resource(max_entries=16, show_spinner=False)
def arena_board(digest: str, kind: str, _log: VoteLog):  # noqa: ARG001 - cache key
    """The leaderboard (1,000 bootstrap rounds) and the arena's figures of a vote log, once per
    log content (``digest``) and rating."""
    board = rate(_log, kind, rounds=1000)
    return (board, plots.ratings_frame(board), plots.ratings_figure(board),
            plots.win_rate_figure(win_rate_matrix(_log)), plots.votes_over_time_figure(list(_log)))


def log_digest(log: VoteLog) -> str:
    return hashlib.sha256(arena.votes_jsonl(list(log)) + f"|{log.n_left_out}".encode()).hexdigest()


def thumbnail(path: Path | None, size: int = EDIT_SIZE, boxes_of=None) -> bytes | None:
    """The image at ``path`` as the page sends it: shrunk and JPEG-encoded once (``browse.THUMBNAILS``),
    with the boxes of the item ``boxes_of`` drawn on it when given."""
    return None if path is None else browse.THUMBNAILS.jpeg(path, size, item=boxes_of)


identity = access.require_role("researcher")
st.title("HOI-Edit comparisons")
st.caption("Edits of how a person interacts with an object, at three levels (L1 foundational, L2 spatial, L3 causal "
           "and physical), scored by HOI-Eval: interaction I (the judge's yes-confidence that the interaction "
           "happened), human and object consistency H and O, and I+Q&A for L2 and L3. After HOI-Edit (ICML 2026).")

with st.sidebar:
    st.subheader("Benchmark")
    root_text = st.text_input("Benchmark folder", DEMO, key="hoi-root",
                              help="datasets/hoi/<name>: a folder of the data folder with the two HOI-Edit annotation "
                                   "JSONs, images/L1L2 and images/L3, and each method's edits in "
                                   f"<method>_frames/<split>/<key> (upstream's layout); {DEMO}: the shipped demo.")
try:
    root = benchmark_folder(root_text)
except FileRefused as exc:
    st.error(f"{exc} A benchmark is the shipped demo ({DEMO}) or a folder registered under "
             f"datasets/hoi/ ({area_folder('datasets', 'hoi')}).")
    st.stop()
layers = tuple(map(str, hoi_jobs.result_layers(root)))
stamp = folder_stamp([root, *map(Path, layers)])
try:
    workspace = cached_workspace(str(root), layers, stamp)
except (BenchmarkFormatError, MethodsFileError) as exc:
    st.error(f"The benchmark does not read: {exc}")
    st.stop()
for problem in workspace.problems:
    st.warning(f"Records not read, so that method is shown unscored: {problem}")
if any(method.offline for method in workspace.methods.values()):
    st.info("Synthetic demo: drawn scenes, and edits, scores and votes made by the project's offline roles "
            "(`python -m engines.hoi demo`). They show how the page works, not how real models do.")

with st.sidebar:
    split = st.selectbox("Split", workspace.benchmark.splits, key="hoi-split",
                         format_func={"L1L2": "L1 and L2", "L3": "L3"}.get)
    filters = [None, *browse.level_filters(workspace, split)]
    level_or_tag = st.selectbox("Level or tag", filters, key="hoi-filter",
                                format_func=lambda f: "all items" if f is None else f)
    all_methods = list(workspace.methods)
    # keyed by the folder: another folder's methods start all chosen, not as the last folder's choice
    methods = st.multiselect("Methods", all_methods, default=all_methods, key=f"hoi-methods:{root}",
                             format_func=lambda m: workspace.methods[m].label or m)
    sort = st.selectbox("Sort items by", browse.SORTS, key="hoi-sort")
    overlays = st.toggle("Box overlays", value=True, key="hoi-boxes",
                         help="Blue: the person; red: the object; yellow: the tool, as the benchmark annotates them.")

if not methods:
    st.info("Choose at least one method in the sidebar.")
    st.stop()


def show_leaderboard() -> None:
    rows, frame, figure, tag_rows, tag_figure = leaderboard_view(str(root), layers, stamp, tuple(methods), split)
    if not rows:
        st.info("No chosen method has evaluation records yet (records/<method>.json): run HOI-Eval on it with "
                "`python -m engines.hoi evaluate`.")
        return
    st.dataframe(frame, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.4f") for c in rows[0] if c != "method"})
    st.caption("The paper's table: L1 from the L1/L2 file, L3 from the L3 file. I, H and O count each item "
               "once per level; I+Q&A counts every (item, tag) pair. Items whose record carries an error are "
               "skipped, not scored zero, as upstream.")
    st.plotly_chart(figure, key="hoi-leaderboard-figure")
    with st.expander(f"Per tag ({split})"):
        st.dataframe(tag_rows, width="stretch", hide_index=True)
        st.plotly_chart(tag_figure, key="hoi-tag-figure")


@st.fragment
def show_item(keys: list[str]) -> None:
    """One item with every chosen method's edit. A fragment: paging reruns only this, not the page."""
    position = st.number_input(f"Item (1 to {len(keys)}, {sort})", 1, len(keys), 1, key="hoi-item")
    item = workspace.benchmark.get(split, keys[int(position) - 1])
    view = browse.item_view(workspace, split, item.key, methods)
    left, right = st.columns([2, 3])
    with left:
        if item.image_path is None:
            st.warning(f"The source image images/{split}/{item.key} is missing.")
        else:
            st.image(thumbnail(item.image_path, SOURCE_SIZE, item if overlays else None), caption=f"Source: {item.key}",
                     width="stretch")
    with right:
        st.markdown(f"**Instruction:** {item.instruction}")
        st.markdown(f"**Tags:** {', '.join(item.tags) or '—'}")
        if item.interaction_question:
            st.markdown(f"**Interaction question:** {item.interaction_question}")
        for tag, question in item.aux_questions.items():
            st.markdown(f"**{tag}:** {question}")
    st.subheader("Edits")
    for start in range(0, len(view.outputs), 3):
        for column, output in zip(st.columns(3), view.outputs[start:start + 3], strict=False):
            with column:
                show_output(output)
    warm_next(keys, int(position))
    for output in view.outputs:
        if output.strip:
            st.subheader(f"{workspace.methods[output.method].label or output.method}: frames")
            captions = [f"frame {i}" + (" (chosen)" if i == output.selected_frame else "")
                        for i in range(len(output.strip))]
            st.image([thumbnail(p, FRAME_SIZE) for p in output.strip], caption=captions, width=120)
            if output.trace:
                with st.expander("SCPE trace"):
                    st.json(output.trace, expanded=False)


def warm_next(keys: list[str], position: int) -> None:
    """Shrink and encode the next item's images while the person looks at this one (a background
    thread): paging on is then drawn from the cache."""
    if position >= len(keys):
        return
    following = workspace.benchmark.get(split, keys[position])
    source, edits = browse.item_images(workspace, split, following.key, methods)
    wanted = [(path, EDIT_SIZE, None) for path in edits]
    if source is not None:
        wanted.insert(0, (source, SOURCE_SIZE, following if overlays else None))
    browse.THUMBNAILS.warm(wanted)


def show_output(output: browse.MethodOutput) -> None:
    label = workspace.methods[output.method].label or output.method
    if output.image_path is None:
        st.markdown(f"**{label}**")
        st.caption("No edit of this item.")
        return
    st.image(thumbnail(output.image_path), caption=label, width="stretch")
    record = output.record
    if record is None:
        st.caption("Not evaluated.")
    elif record.failed:
        st.caption("Skipped by the scorer: " + "; ".join(record.errors))
    else:
        st.caption(f"I {browse.format_score(record.I)} · H {browse.format_score(record.H)} · "
                   f"O {browse.format_score(record.O)} · item score {browse.format_score(output.score)}")
    if output.reasoning:
        with st.expander("The judge's reasoning"):
            st.write(output.reasoning)


def show_items() -> None:
    keys = item_keys(str(root), layers, stamp, split, level_or_tag, tuple(methods), sort)
    if not keys:
        st.info("No item of this split matches the filter.")
        return
    show_item(keys)


def show_arena() -> None:
    st.caption("Participants see two anonymous, side-swapped edits of the same item and vote; the names are shown "
               "only after the vote, and votes cast with the names shown do not count. Ratings as GenAI-Arena: "
               "each method's bootstrap median (Bradley–Terry, or online Elo) with the 95% interval of the same "
               "1,000 bootstrap rounds.")
    studies = arena.arena_studies()
    source = st.selectbox("Votes of", [*studies, FOLDER_VOTES], key="hoi-votes-source",
                          format_func=lambda s: s if s == FOLDER_VOTES else f"the arena study “{s}”")
    log = None
    if source == FOLDER_VOTES:
        if not workspace.votes_path.is_file():
            st.info(f"No votes in {shown(root)}/{browse.VOTES_FILE}.")
        else:
            stat = workspace.votes_path.stat()
            try:
                log = folder_votes(str(workspace.votes_path), stat.st_mtime_ns, stat.st_size)
            except VoteFormatError as exc:
                st.error(f"The votes do not read: {exc}")
    else:
        show_comparison(arena.study_comparison(source))
        log = VoteLog(tuple(arena.study_votes(source)))
        st.download_button("Download the votes (JSONL)", arena.votes_jsonl(list(log)), f"{source}-votes.jsonl",
                           key="hoi-votes-download")
    if log is not None and not len(log):
        st.info("No vote yet. Participants join through the study's link (Manage studies).")
    elif log is not None:
        kind = st.radio("Rating", ["bt", "elo"], horizontal=True, key="hoi-rating",
                        format_func={"bt": "Bradley–Terry", "elo": "Elo"}.get)
        board, frame, ratings_figure, win_figure, time_figure = arena_board(log_digest(log), kind, log)
        st.markdown(f"{board.n_votes} votes counted" + (f", {board.n_left_out} left out (names shown before the "
                                                         "vote)" if board.n_left_out else ""))
        left, right = st.columns(2)
        left.dataframe(frame, hide_index=True, width="stretch")
        right.plotly_chart(ratings_figure, key="hoi-ratings-figure")
        st.plotly_chart(win_figure, key="hoi-win-figure")
        st.plotly_chart(time_figure, key="hoi-votes-figure")
    with st.expander("Arena studies: what each compares, and a new one on this benchmark"):
        show_studies(studies)
        new_study_form()


def show_comparison(comparison: arena.StudyComparison) -> None:
    state = "open" if comparison.is_open else "not open"
    st.caption(f"The study “{comparison.slug}” ({state}) compares {len(comparison.labels)} methods on "
               f"{comparison.benchmark}, fixed when it was created: "
               + ", ".join(f"{name} ({method})" if name != method else method
                           for method, name in comparison.labels.items()) + ".")


def show_studies(studies: list[str]) -> None:
    """Every arena study with the methods it compares (fixed when it was created), open or not."""
    if not studies:
        st.caption("No arena study yet.")
        return
    rows = []
    for slug in studies:
        comparison = arena.study_comparison(slug)
        rows.append({"study": slug, "open": comparison.is_open, "benchmark": comparison.benchmark,
                     "pairs each": comparison.rounds,
                     "methods (name shown after the vote)": "; ".join(
                         f"{method}: {name}" for method, name in comparison.labels.items())})
    st.dataframe(rows, hide_index=True, width="stretch")


def new_study_form() -> None:
    """Create an arena study on this benchmark, not yet open: its methods and their names are the
    ones chosen here and are fixed with it; a method whose edits reach the folder later joins only
    studies created after that."""
    try:
        offered = arena.output_methods(root)
        names = arena.read_method_labels(root)
    except arena.ArenaError as exc:
        st.caption(f"No arena study can run on this folder: {exc}")
        return
    if len(offered) < 2:
        st.caption(f"No arena study can run on {shown(root)}: it has edits of {len(offered)} method(s), the arena "
                   "compares two or more (<method>_frames/ in the folder itself).")
        return
    with st.form("hoi-new-arena"):
        st.markdown(f"**A new arena study on {shown(root)}**")
        left, right = st.columns([2, 1])
        slug = left.text_input("Study name (its link's ?study=)", key="hoi-arena-slug", placeholder="hoi-arena-1")
        rounds = right.number_input("Pairs each participant votes on", 1, 50, 10, key="hoi-arena-rounds")
        chosen = st.multiselect("Methods compared (fixed with the study)", offered, default=offered,
                                key=f"hoi-arena-methods:{root}", format_func=lambda m: f"{names.get(m, m)} ({m})")
        st.caption("Created closed: open it on the Studies page once you have checked what it compares (listed "
                   "above after it is created).")
        if st.form_submit_button("Create the study"):
            try:
                frozen = arena.frozen_methods(root, chosen)
                study_admin.create_study(slug.strip(), "hoi_arena", config={
                    "constants": {**frozen, "ROUNDS": int(rounds)}}, is_open=False, created_by=identity.user_id)
            except (arena.ArenaError, LinkError, StudyError) as exc:
                st.error(str(exc))
            else:
                st.success(f"Created the arena study “{slug.strip()}”, closed, comparing "
                           f"{', '.join(frozen['LABELS'].values())}. Open it on the Studies page.")


def show_run() -> None:
    st.caption(f"Both run as background jobs on {shown(root)}, which they only read: each writes into its own result "
               "folder HOI-Eval's records (records/<method>.json), and for SCPE the method's chosen frames, frame "
               "strips and traces. The tabs above show them with the benchmark when the job is done, also after a "
               "reload.")
    with st.form("hoi-evaluate"):
        st.markdown("**Evaluate a method with HOI-Eval**")
        left, middle, right = st.columns(3)
        method = left.selectbox("Method", all_methods, key="hoi-eval-method",
                                format_func=lambda m: workspace.methods[m].label or m)
        judge = middle.selectbox("VLM judge", backends.names("judge"), key="hoi-eval-judge",
                                 help="offline: the demo's pixel reader; openai: an OpenAI-compatible endpoint")
        grounder = right.selectbox("Grounder", backends.names("grounder"), key="hoi-eval-grounder")
        left, middle, right = st.columns(3)
        base_url = left.text_input("Endpoint (openai judge)", "", key="hoi-eval-url",
                                   placeholder="http://localhost:8000/v1")
        model = middle.text_input("Model (openai judge)", "", key="hoi-eval-model",
                                  placeholder="Qwen2.5-VL-7B-Instruct")
        key_variable = right.text_input("API key variable (openai judge)", "", key="hoi-eval-key",
                                        placeholder="HAI_API_KEY_OPENAI",
                                        help="The name of a server variable declared for API keys (HAI_API_KEY_*), "
                                             "never the key itself.")
        if st.form_submit_button("Start the evaluation"):
            options = {k: v for k, v in (("base_url", base_url.strip()), ("model", model.strip()),
                                         ("api_key_env", key_variable.strip())) if v}
            try:
                job_id = jobqueue.submit_job(hoi_jobs.EVALUATE, {
                    "benchmark": shown(root), "method": method, "judge": judge, "grounder": grounder,
                    "judge_options": options if judge != "offline" else {}}, submitted_by=identity.user_id)
            except jobqueue.JobError as exc:
                st.error(str(exc))
            else:
                st.success(f"Queued evaluation #{job_id}; its progress is below.")
    with st.form("hoi-scpe"):
        st.markdown("**SCPE with an image-to-video model**")
        left, middle, right = st.columns(3)
        i2v_roles = backends.names("i2v")
        i2v_role = left.selectbox("I2V model", i2v_roles, index=i2v_roles.index(hoi_jobs.DEFAULT_I2V),
                                  key="hoi-scpe-i2v",
                                  help="offline: the demo's drawn animation (runs anywhere); gradio: a `python -m "
                                       "engines.hoi serve` endpoint; diffusers: a local pipeline (a GPU machine)")
        url = middle.text_input("Gradio URL (gradio)", "", key="hoi-scpe-url", placeholder="http://gpu-box:7861")
        name = right.text_input("Save as method", "scpe", key="hoi-scpe-method")
        left, middle, right = st.columns(3)
        epochs = left.number_input("Learning epochs", 0, 5, 1, key="hoi-scpe-epochs")
        retries = middle.number_input("Tries per item", 1, 5, 1, key="hoi-scpe-retries",
                                      help="1 is upstream: no retry")
        limit = right.number_input("Only the first N items (0: all)", 0, 100_000, 0, key="hoi-scpe-limit")
        if st.form_submit_button("Start SCPE"):
            i2v = {"role": i2v_role, **({"url": url.strip()} if i2v_role == "gradio" and url.strip() else {})}
            try:
                job_id = jobqueue.submit_job(hoi_jobs.SCPE, {
                    "benchmark": shown(root), "i2v": i2v, "method": name.strip(), "epochs": int(epochs),
                    "retries": int(retries), "limit": int(limit) or None}, submitted_by=identity.user_id)
            except jobqueue.JobError as exc:
                st.error(str(exc))
            else:
                st.success(f"Queued SCPE #{job_id}; its progress is below.")

    @st.fragment(run_every="2s")
    def recent_jobs() -> None:
        widgets.jobs_table(hoi_jobs.jobs_frame(hoi_jobs.hoi_jobs()), "No HOI-Edit job yet.")

    recent_jobs()


board_tab, items_tab, arena_tab, run_tab = st.tabs(list(TABS), key="hoi-tab", on_change="rerun")
with board_tab:
    if board_tab.open:
        show_leaderboard()
with items_tab:
    if items_tab.open:
        show_items()
with arena_tab:
    if arena_tab.open:
        show_arena()
with run_tab:
    if run_tab.open:
        show_run()
