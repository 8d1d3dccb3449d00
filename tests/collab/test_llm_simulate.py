"""``simulate --human llm``: an LLM plays the human, against a local fake endpoint and a tiny random model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engines.collab.__main__ import main
from engines.collab.llm_simulate import LLMConfig, make_cases, simulate_llm
from engines.collab.medical import default_world
from engines.collab.plots import result_view
from engines.collab.simulate import SimulationConfig, simulate
from engines.platform import settings
from engines.platform.credentials import SecretRefused
from engines.platform.endpoints import EndpointRefused
from tests.collab import ddxplus_fixture as fx
from tests.collab.fake_llm import FakeServer, ScriptedClinician, tiny_gpt2
from tests.collab.test_medical import ddxplus_folder


def _llm_config(**kwargs) -> SimulationConfig:
    return SimulationConfig(human="llm", rounds=2, **kwargs)


@pytest.fixture(scope="module")
def shapes_run():
    """16 shape interactions, online and fixed, with a persona switch at t = 8."""
    model = ScriptedClinician()
    server = FakeServer(respond=model)
    llm = LLMConfig(base_url=server.url, model="fake-model", transcripts=3, persona="You are calm.",
                    persona_switch="You are in a hurry.")
    result = simulate_llm(_llm_config(T=16, n_calibration=10), llm)
    yield result, json.loads(json.dumps(result.to_dict(), allow_nan=False)), server
    server.close()


def test_result_has_the_simulate_fields_and_the_llm_ones(shapes_run):
    result, data, server = shapes_run
    view = result_view(data)  # the simulations page draws it like any simulate result
    assert view.kind == "simulate" and "human llm" in view.title and "violations" in view.figures
    assert data["engine"] == "llm" and data["config"]["human"] == "llm" and data["config"]["n_labels"] == 10
    assert data["config"]["ai"] == "cnn"  # the shipped CNN on the generated images, whatever the default said
    assert data["calibration"]["n"] == 10 and data["calibration"]["passes"] == 0
    for run in ("online", "fixed"):
        for key in ("violation_rate", "target", "bound", "within_bound", "accuracy", "trace", "mean_set_size"):
            assert key in data[run]
    llm = data["llm"]
    assert (llm["backend"], llm["model"], llm["base_url"]) == ("openai_compatible", "fake-model", server.url)
    assert llm["labels"] == [str(c) for c in range(10)]
    assert llm["calls"] == len(server.requests) == 10 + 2 * 16 * 3  # calibration + 2 runs x (rounds + 1) answers
    assert (llm["unusable_replies"], llm["retries"], llm["fallbacks"]) == (0, 0, 0)
    assert "api_key" not in json.dumps(llm).replace("api_key_env", "")
    for run in ("online", "fixed"):
        records = llm["interactions"][run]
        assert [r["t"] for r in records] == list(range(16))
        assert ["replies" in r for r in records] == [True] * 3 + [False] * 13  # --llm-transcripts 3
        assert len(records[0]["replies"]) == len(records[0]["answers"]) == 3
    assert "LLM openai_compatible (fake-model): 106 calls" in data["summary"]


def test_rates_and_accuracies_come_from_the_stored_interactions(shapes_run):
    _, data, _ = shapes_run
    for run in ("online", "fixed"):
        records = data["llm"]["interactions"][run]
        for name in ("harm", "comp"):
            assert data[run]["violation_rate"][name] == pytest.approx(np.mean([r[f"err_{name}"] for r in records]))
        assert data[run]["accuracy"] == pytest.approx(np.mean([r["answers"][-1] == r["label"] for r in records]))
        assert data["collab_accuracy"][run] == data[run]["accuracy"]
    online = data["llm"]["interactions"]["online"]
    assert data["human_alone_accuracy"] == pytest.approx(np.mean([r["answers"][0] == r["label"] for r in online]))
    bound = data["online"]["bound"]["harm"]
    assert data["online"]["within_bound"]["harm"] == (data["online"]["violation_rate"]["harm"] <= 0.05 + bound)


def test_online_thresholds_move_and_fixed_ones_do_not(shapes_run):
    _, data, _ = shapes_run
    q1 = data["calibration"]["q_harm"]
    online = [r["q_harm"] for r in data["llm"]["interactions"]["online"]]
    fixed = [r["q_harm"] for r in data["llm"]["interactions"]["fixed"]]
    assert online[0] == fixed[0] == q1
    assert len(set(online)) == 16  # q <- q + η(err − α) changes it after every interaction
    assert set(fixed) == {q1} and data["fixed"]["final_thresholds"]["harm"] == q1
    assert data["online"]["final_thresholds"]["harm"] != q1


def test_persona_switch_and_prompts(shapes_run):
    _, data, server = shapes_run
    assert data["shift_points"] == [8] and "persona switch" in data["schedule_description"]
    systems = [r["body"]["messages"][0]["content"] for r in server.requests]
    assert sum("You are in a hurry." in s for s in systems) == 2 * 8 * 3  # t >= 8 in both runs
    assert all(r["body"]["model"] == "fake-model" and r["auth"] is None for r in server.requests)


def test_perceived_descriptions_make_hard_images_hard_for_a_text_reader():
    """The scripted reader counts the triangles named outright: exact on "exact" scenes, not on "perceived" ones."""
    server = FakeServer(respond=ScriptedClinician())
    try:
        runs = {detail: simulate_llm(_llm_config(T=30, n_calibration=5, with_fixed=False, seed=3),
                                     LLMConfig(base_url=server.url, model="m", shape_detail=detail))
                for detail in ("exact", "perceived")}
    finally:
        server.close()
    assert runs["exact"].result.human_alone_accuracy == 1.0
    assert runs["perceived"].result.human_alone_accuracy < 1.0
    first = {d: np.array([r["answers"][0] for r in run.interactions["online"]]) for d, run in runs.items()}
    assert np.all(first["perceived"] <= first["exact"])  # ambiguous triangles are not counted


def test_following_the_ai_set_improves_a_poor_clinician():
    """Alone the scripted clinician always names the first pathology; shown a set without it, it takes the set's first."""
    server = FakeServer(respond=ScriptedClinician())
    try:
        result = simulate_llm(_llm_config(task="medical", T=20, n_calibration=10, with_fixed=False),
                              LLMConfig(base_url=server.url, model="m"))
    finally:
        server.close()
    assert result.result.config.n_labels == len(default_world().pathologies) == 12
    assert result.labels == default_world().pathologies
    assert result.online.accuracy > result.result.human_alone_accuracy + 0.4
    # Evidence is revealed round by round: the round-2 prompt knows more than the round-1 one.
    first, second = (r for r in server.requests[10:12])
    assert len(second["body"]["messages"][1]["content"]) > len(first["body"]["messages"][1]["content"])


def test_real_ddxplus_patients(tmp_path):
    server = FakeServer(respond=ScriptedClinician())
    try:
        folder = str(ddxplus_folder(tmp_path))  # the zip as downloaded: four patients
        result = simulate_llm(_llm_config(task="medical", ddxplus_dir=folder, T=2, n_calibration=2, with_fixed=False),
                              LLMConfig(base_url=server.url, model="m"))
        prompts = [r["body"]["messages"][1]["content"] for r in server.requests]
        # Calibration and run take disjoint patients; 4 + 6 from four patients repeat, and the result says so.
        repeated = simulate_llm(_llm_config(task="medical", ddxplus_dir=folder, T=6, n_calibration=4,
                                            with_fixed=False), LLMConfig(base_url=server.url, model="m"))
    finally:
        server.close()
    assert result.labels == fx.LABELS and result.result.config.n_labels == 4
    assert result.result.ai_alone_accuracy == 1.0  # the fixture's differentials rank the pathology first
    data = result.to_dict()
    assert data["patients"] == {"cases": 4, "distinct_patients": 4, "patients_in_release": 4, "cases_repeat": False}
    assert "Allowed answers: Acute pulmonary edema, Bronchiolitis, Pneumonia, URTI." in prompts[-1]
    patients = {line for p in prompts for line in p.splitlines() if line.startswith("Patient: ")}
    assert len(patients) == 4  # four different patients (their ages differ)
    assert any("Chief complaint: Do you have a fever (either felt or measured with a thermometer)? yes" in p
               for p in prompts)
    assert repeated.to_dict()["patients"]["cases_repeat"] is True
    assert "DDXPlus: 10 cases from 4 of the release's 4 patients, patients repeat" in repeated.summary()


def test_ddxplus_cases_follow_the_seed(tmp_path):
    rows = sorted(fx.random_patients(60, seed=2), key=lambda row: row["PATHOLOGY"])  # a file sorted by pathology
    folder = str(fx.write_release(tmp_path / "sorted", patients=rows))
    llm = LLMConfig(base_url="http://127.0.0.1:9/v1", model="m")

    def labels(seed):
        (cal, run), patients = make_cases(_llm_config(task="medical", ddxplus_dir=folder, T=20, n_calibration=10,
                                                      seed=seed), llm, (10, 20))
        assert patients["cases_repeat"] is False and len(cal) == 10 and len(run) == 20
        return [c.label for c in cal + run]

    assert labels(0) == labels(0) != labels(1)
    assert len(set(labels(0))) == 4  # not the file's first 30 rows, which are one or two pathologies
    assert len({r["PATHOLOGY"] for r in rows[:30]}) <= 2


def test_parse_failures_are_counted():
    model = ScriptedClinician(garbage_rounds=(2,))
    server = FakeServer(respond=model)
    try:
        result = simulate_llm(_llm_config(task="medical", T=6, n_calibration=4),
                              LLMConfig(base_url=server.url, model="m", transcripts=1))
    finally:
        server.close()
    data = result.to_dict()
    assert data["llm"]["counts"]["calibration"]["unusable_replies"] == 0  # round 1 only
    assert data["llm"]["counts"]["online"] == {"answers": 18, "replies": 24, "unusable_replies": 12,
                                               "retries": 6, "fallbacks": 6}
    assert (data["llm"]["unusable_replies"], data["llm"]["retries"], data["llm"]["fallbacks"]) == (24, 12, 12)
    record = data["llm"]["interactions"]["online"][0]
    assert record["fallbacks"] == 1 and record["answers"][1] == record["answers"][0]  # kept its previous answer
    assert record["parse_errors"] == ["no JSON object found in the reply"]
    assert record["replies"][1] == ["Let me think about it. Probably the second one."] * 2
    assert "12 fallbacks" in data["summary"]


# Command line

def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def closed_url():
    server = FakeServer()
    url = server.url
    server.close()
    return url


@pytest.mark.parametrize("extra, message", [
    ((), "--human llm needs an LLM backend: --llm-base-url URL --llm-model NAME"),
    (("--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m", "--llm-local", "/models/x"), "not both"),
    (("--llm-base-url", "http://127.0.0.1:9/v1"), "needs --llm-model"),
    (("--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m", "--llm-api-key-env", "HAI_API_KEY_NO_SUCH_TEST"),
     "--llm-api-key-env: the variable HAI_API_KEY_NO_SUCH_TEST is not set"),
    (("--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m", "--llm-api-key-env", "HOME"),
     "--llm-api-key-env: 'HOME' is not a variable declared for API keys"),
    (("--llm-base-url", "http://169.254.169.254/v1", "--llm-model", "m"),
     "--llm-base-url: the host '169.254.169.254' is not among the endpoint hosts"),
    (("--llm-local", "/nonexistent/model"), "no local model folder at '/nonexistent/model'"),
    (("--llm-local", "/nonexistent/model", "--schedule", "drift"), "the LLM human runs 'stationary'"),
])
def test_cli_rejects_bad_backend_options(capsys, extra, message):
    code, out, err = _cli(capsys, "simulate", "--human", "llm", "--task", "medical", "--quick", *extra)
    assert code == 2 and out == ""
    assert message in err


def test_cli_names_an_unreachable_endpoint(capsys, closed_url):
    code, _, err = _cli(capsys, "simulate", "--human", "llm", "--task", "medical", "--quick",
                        "--llm-base-url", closed_url, "--llm-model", "m")
    assert code == 2 and f"error: the LLM backend at {closed_url!r} failed" in err


def test_parametric_entry_points_refuse_the_llm_human(capsys):
    with pytest.raises(ValueError, match="needs a chat backend"):
        simulate(SimulationConfig(human="llm", T=5))
    code, _, err = _cli(capsys, "sweep", "--quick", "--human", "llm")
    assert code == 2 and "needs a chat backend" in err


def test_cli_with_an_api_key_from_the_environment(capsys, monkeypatch, tmp_path):
    server = FakeServer(respond=ScriptedClinician())
    monkeypatch.setenv("HAI_API_KEY_TEST", "sk-local-test")
    try:
        code, out, err = _cli(capsys, "--json", "simulate", "--human", "llm", "--task", "medical", "--T", "4",
                              "--n-calibration", "3", "--rounds", "1", "--no-fixed", "--llm-base-url", server.url,
                              "--llm-model", "m", "--llm-api-key-env", "HAI_API_KEY_TEST",
                              "--out", str(tmp_path / "run.json"))
    finally:
        server.close()
    assert code == 0, err
    data = json.loads(out)
    assert json.loads((tmp_path / "run.json").read_text()) == data
    assert data["fixed"] is None and data["config"]["T"] == 4 and data["llm"]["calls"] == 3 + 4 * 2
    assert {r["auth"] for r in server.requests} == {"Bearer sk-local-test"}
    assert "sk-local-test" not in out  # the key never reaches the result


# Which key goes where: only a declared key variable, only to an allowed endpoint, checked before any request

@pytest.fixture(autouse=True)
def settings_read_afresh():
    """Settings read from this test's environment, and forgotten after it (they are cached per process)."""
    settings.reset_settings()
    yield
    settings.reset_settings()


@pytest.fixture
def counted_server():
    """A fake endpoint that keeps every request it gets (``requests``)."""
    server = FakeServer()
    yield server
    server.close()


@pytest.mark.parametrize("variable", ["HAI_DATABASE_URL", "HOME", "HAI_PSEUDONYM_KEY", "PATH"])
def test_a_key_variable_not_declared_for_api_keys_is_refused_before_any_request(counted_server, monkeypatch,
                                                                                variable):
    monkeypatch.setenv("HAI_DATABASE_URL", "postgresql://hai:db-password@db/hai")
    monkeypatch.setenv("HAI_PSEUDONYM_KEY", "k" * 40)
    with pytest.raises(SecretRefused, match=f"--llm-api-key-env: '{variable}' is not a variable declared"):
        LLMConfig(base_url=counted_server.url, model="m", api_key_env=variable)
    assert counted_server.requests == []


def test_the_cli_refuses_the_database_url_as_a_key_and_sends_nothing(capsys, counted_server, monkeypatch):
    monkeypatch.setenv("HAI_DATABASE_URL", "postgresql://hai:db-password@db/hai")
    code, out, err = _cli(capsys, "simulate", "--human", "llm", "--task", "medical", "--T", "2", "--n-calibration",
                          "2", "--rounds", "1", "--llm-base-url", counted_server.url, "--llm-model", "m",
                          "--llm-api-key-env", "HAI_DATABASE_URL")
    assert code == 2 and "is not a variable declared for API keys" in err
    assert counted_server.requests == [] and "db-password" not in out + err


def test_a_declared_key_variable_is_accepted_and_its_key_sent(counted_server, monkeypatch):
    monkeypatch.setenv("HAI_API_KEY_TEST", "sk-declared")
    monkeypatch.setenv("HAI_API_KEY_VARIABLES", "OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-listed")
    for variable, key in (("HAI_API_KEY_TEST", "sk-declared"), ("OPENAI_API_KEY", "sk-listed")):
        backend = LLMConfig(base_url=counted_server.url, model="m", api_key_env=variable).backend()
        backend.complete([{"role": "user", "content": "hi"}], temperature=0, max_tokens=1, seed=0)
        assert counted_server.requests[-1]["auth"] == f"Bearer {key}"


@pytest.mark.parametrize("url", ["http://169.254.169.254/latest/v1", "http://[fe80::1]/v1", "file:///etc/passwd",
                                 "http://user:pw@127.0.0.1:9/v1"])
def test_an_endpoint_this_server_may_not_reach_is_refused_when_configured(url):
    with pytest.raises(EndpointRefused, match="--llm-base-url: "):
        LLMConfig(base_url=url, model="m")


def test_the_allowed_endpoint_hosts_are_those_the_operator_lists(counted_server, monkeypatch):
    monkeypatch.setenv("HAI_ENDPOINT_HOSTS", "models.example.org")
    with pytest.raises(EndpointRefused, match="'127.0.0.1' is not among the endpoint hosts"):
        LLMConfig(base_url=counted_server.url, model="m")
    assert LLMConfig(base_url="https://models.example.org/v1", model="m").base_url == "https://models.example.org/v1"
    assert counted_server.requests == []


# A tiny random GPT-2 through the transformers backend (local files only)

@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    model, tokenizer = tiny_gpt2()
    path = tmp_path_factory.mktemp("tiny-gpt2")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_tiny_local_model_end_to_end(capsys, tiny_model_dir):
    code, out, err = _cli(capsys, "--json", "simulate", "--human", "llm", "--task", "medical", "--llm-local",
                          str(tiny_model_dir), "--T", "3", "--n-calibration", "3", "--rounds", "1",
                          "--llm-max-tokens", "4", "--llm-transcripts", "1")
    assert code == 0, err
    data = json.loads(out)
    llm = data["llm"]
    assert llm["backend"] == "transformers" and llm["local"] == str(tiny_model_dir)
    # A random model never writes valid JSON: every answer is retried, then falls back (to the first label).
    answers = sum(part["answers"] for part in llm["counts"].values())
    assert answers == 3 + 2 * 3 * 2 and llm["calls"] == 2 * answers
    assert llm["fallbacks"] == llm["retries"] == answers and llm["unusable_replies"] == 2 * answers
    assert all(r["answers"] == [0, 0] for r in llm["interactions"]["online"])
    assert len(llm["interactions"]["online"][0]["replies"]) == 2


def test_cli_refuses_a_score_file_for_the_llm_human(capsys, closed_url):
    code, _, err = _cli(capsys, "simulate", "--human", "llm", "--quick", "--llm-base-url", closed_url,
                        "--llm-model", "m", "--ai-scores", "elsewhere.npz")
    assert code == 2 and "--ai-scores does not apply to --human llm" in err
