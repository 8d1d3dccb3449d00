"""Tests of ``engines.video.questions`` and ``engines.video.loaders``: each benchmark reader on a tiny file in its upstream shape.

The fixture records are written by hand in the shapes of each benchmark's upstream files (docs/video.md, "Method: benchmark formats")
(LVBench ``video_info.meta.jsonl``, LongVideoBench ``lvb_val.json``, Video-MME parquet, MLVU task
JSON, EgoSchema ``questions.json`` + ``subset_answers.json``); texts are invented. Expected values
are written out by hand too. Line numbers of the JSONL fixtures are relied on (one record a line).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from engines.video.loaders import (
    detect_format,
    read_egoschema,
    read_longvideobench,
    read_lvbench,
    read_lvbench_flat,
    read_mlvu,
    read_questions,
    read_videomme,
    write_lvbench_flat,
)
from engines.video.questions import Question, QuestionFormatError, parse_options
from engines.video.spans import Span

# ---------------------------------------------------------------- fixtures in the upstream shapes

# LVBench video_info.meta.jsonl: line 1 has two questions (the second with upstream's malformed
# "08:17-None"), line 2 one question with a zero-width reference and no video_info.
LVBENCH_LINES = [
    {
        "key": "7bGj1Q6W8Lo",
        "type": "cartoon",
        "qa": [
            {
                "uid": "0",
                "question": "What colour is the kite at the start?\n(A) Red\n(B) Blue\n(C) Green\n(D) Yellow",
                "answer": "B",
                "question_type": ["key information retrieval"],
                "time_reference": "00:15-00:19",
            },
            {
                "uid": "1",
                "question": "What happens right after the dog barks at 08:17?\n(A) It runs\n(B) It sleeps\n"
                            "(C) It eats\n(D) It jumps",
                "answer": "A",
                "question_type": ["event understanding", "reasoning"],
                "time_reference": "08:17-None",
            },
        ],
        "video_info": {"duration_minutes": 67.5},
    },
    {
        "key": "fn4nRzJvCfA",
        "type": "documentary",
        "qa": [
            {
                "uid": 2,  # an integer uid: upstream's scorer reads it with str()
                "question": "How many boats are in the harbour?\n(A) One\n(B) Two\n(C) Three\n(D) Four",
                "answer": "D",
                "question_type": ["entity recognition"],
                "time_reference": "12:34-12:34",
            },
        ],
    },
]

# LongVideoBench lvb_val.json: the second record is as in the test split, without correct_choice.
LONGVIDEOBENCH = [
    {
        "id": "86CxyhFV9MI_0",
        "video_id": "86CxyhFV9MI",
        "video_path": "86CxyhFV9MI.mp4",
        "duration": 478.2,
        "duration_group": 600,
        "question": "After the man in the red hat opens the door, what does he carry?",
        "question_wo_referring_query": "What does he carry?",
        "candidates": ["A box", "A lamp", "A chair", "A bag"],
        "correct_choice": 3,
        "position": [102, 117],
        "question_category": "E2O",
        "topic_category": "NP-News-Programs",
        "level": "L2-Relation",
        "subtitle_path": "86CxyhFV9MI_en.json",
        "starting_timestamp_for_subtitles": 0,
    },
    {
        "id": "ZwBn2tYDg3c_1",
        "video_id": "ZwBn2tYDg3c",
        "video_path": "ZwBn2tYDg3c.mp4",
        "duration": 1820.0,
        "duration_group": 3600,
        "question": "Which instrument is played when the subtitle mentions rain?",
        "question_wo_referring_query": "Which instrument is played?",
        "candidates": ["Piano", "Violin", "Drums", "Flute", "Guitar"],
        "position": [410],
        "question_category": "T3O",
        "topic_category": "KC-Knowledge-Concepts",
        "level": "L1-Perception",
        "subtitle_path": "ZwBn2tYDg3c_en.json",
        "starting_timestamp_for_subtitles": 12.5,
    },
]

VIDEOMME = [
    {
        "video_id": "001",
        "duration": "short",
        "domain": "Knowledge",
        "sub_category": "Humanity & History",
        "url": "https://www.youtube.com/watch?v=fFjv93ACGo8",
        "videoID": "fFjv93ACGo8",
        "question_id": "001-1",
        "task_type": "Counting Problem",
        "question": "How many candles are on the table?",
        "options": ["A. One.", "B. Two.", "C. Three.", "D. Four."],
        "answer": "C",
    },
    {
        "video_id": "001",
        "duration": "short",
        "domain": "Knowledge",
        "sub_category": "Humanity & History",
        "url": "https://www.youtube.com/watch?v=fFjv93ACGo8",
        "videoID": "fFjv93ACGo8",
        "question_id": "001-2",
        "task_type": "Action Recognition",
        "question": "What does the presenter do first?",
        "options": ["A. Waves.", "B. Sits down.", "C. Opens a book.", "D. Lights a candle."],
        "answer": "A",
    },
]

MLVU = [
    {
        "video": "movie101_66.mp4",
        "duration": 246.0,
        "question": "What is the main character holding in the opening scene?",
        "candidates": ["A phone", "An umbrella", "A letter", "A cup"],
        "answer": "A letter",
        "question_type": "plotQA",
    },
    {
        "video": "needle_32.mp4",
        "duration": 467.5,
        "question": "Which animal appears in the inserted clip?",
        "candidates": ["Cat", "Horse", "Owl", "Fish"],
        "answer": "Owl",
        "question_type": "needle",
    },
]

EGOSCHEMA = [
    {
        "q_uid": "0074f737-11cb-497d-8d07-77c3a8127391",
        "google_drive_id": "1YJyeX2x9KcdWuhkD0jNbnMfaxy5zeyFd",
        "question": "What is the overall goal of the person in the video?",
        "option 0": "Cleaning the kitchen",
        "option 1": "Cooking a meal",
        "option 2": "Repairing a bicycle",
        "option 3": "Painting a wall",
        "option 4": "Sorting laundry",
    },
    {
        "q_uid": "00b9a0de-c59e-49cb-a127-6081e2fb8c8e",
        "google_drive_id": "1p4bDbcdNQwBrIcv3kEu5kj3vOb8AVJmJ",
        "question": "How does the person's activity change over time?",
        "option 0": "It speeds up",
        "option 1": "It slows down",
        "option 2": "It stays the same",
        "option 3": "It stops midway",
        "option 4": "It alternates",
    },
]
EGOSCHEMA_ANSWERS = {"0074f737-11cb-497d-8d07-77c3a8127391": 1}


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def lvbench_with_reference(tmp_path: Path, reference) -> Question:
    """The one question of a one-line LVBench file whose time reference is ``reference``."""
    item = {"uid": "9", "question": "Q?\n(A) a\n(B) b", "answer": "A", "question_type": [], "time_reference": reference}
    return read_lvbench(write_jsonl(tmp_path / "video_info.meta.jsonl", [{"key": "k", "qa": [item]}]))[0]


# ---------------------------------------------------------------- readers


def test_read_lvbench(tmp_path):
    questions = read_lvbench(write_jsonl(tmp_path / "video_info.meta.jsonl", LVBENCH_LINES))
    assert questions == [
        Question(uid="0", video_id="7bGj1Q6W8Lo", question="What colour is the kite at the start?",
                 options=("Red", "Blue", "Green", "Yellow"), answer="B",
                 question_type=("key information retrieval",), gt_spans=(Span(15.0, 19.0),),
                 time_reference="00:15-00:19", benchmark="lvbench", duration_s=4050.0),
        Question(uid="1", video_id="7bGj1Q6W8Lo", question="What happens right after the dog barks at 08:17?",
                 options=("It runs", "It sleeps", "It eats", "It jumps"), answer="A",
                 question_type=("event understanding", "reasoning"), gt_spans=(Span(497.0, 497.0),),
                 time_reference="08:17-None", benchmark="lvbench", duration_s=4050.0,
                 note="'08:17-None': no readable end, kept as the point 00:08:17"),
        Question(uid="2", video_id="fn4nRzJvCfA", question="How many boats are in the harbour?",
                 options=("One", "Two", "Three", "Four"), answer="D", question_type=("entity recognition",),
                 gt_spans=(Span(754.0, 754.0),), time_reference="12:34-12:34", benchmark="lvbench",
                 note="'12:34-12:34': zero-width reference, kept as a point in time"),
    ]


@pytest.mark.parametrize(
    ("reference", "spans", "note_part"),
    [
        ("08:17-None", (Span(497.0, 497.0),), "no readable end"),
        ("12:34-12:34", (Span(754.0, 754.0),), "zero-width"),
        ("10:00-09:00", (Span(540.0, 600.0),), "swapped"),
        ("", (), "empty time reference"),
        ("None", (), "empty time reference"),
        ("soon-later", (), "unreadable time reference"),
        ("01:02:03-01:02:10", (Span(3723.0, 3730.0),), None),
    ],
)
def test_malformed_time_reference_is_repaired_with_a_note(tmp_path, reference, spans, note_part):
    question = lvbench_with_reference(tmp_path, reference)
    assert question.gt_spans == spans
    assert question.time_reference == reference
    if note_part is None:
        assert question.note is None
    else:
        assert note_part in question.note and repr(reference) in question.note


def test_read_longvideobench(tmp_path):
    questions = read_longvideobench(write_json(tmp_path / "lvb_val.json", LONGVIDEOBENCH))
    assert questions == [
        Question(uid="86CxyhFV9MI_0", video_id="86CxyhFV9MI",
                 question="After the man in the red hat opens the door, what does he carry?",
                 options=("A box", "A lamp", "A chair", "A bag"), answer="D", question_type=("E2O",),
                 benchmark="longvideobench", duration_s=478.2),
        Question(uid="ZwBn2tYDg3c_1", video_id="ZwBn2tYDg3c",
                 question="Which instrument is played when the subtitle mentions rain?",
                 options=("Piano", "Violin", "Drums", "Flute", "Guitar"), answer=None, question_type=("T3O",),
                 benchmark="longvideobench", duration_s=1820.0),
    ]


EXPECTED_VIDEOMME = [
    Question(uid="001-1", video_id="fFjv93ACGo8", question="How many candles are on the table?",
             options=("One.", "Two.", "Three.", "Four."), answer="C", question_type=("Counting Problem",),
             benchmark="videomme"),
    Question(uid="001-2", video_id="fFjv93ACGo8", question="What does the presenter do first?",
             options=("Waves.", "Sits down.", "Opens a book.", "Lights a candle."), answer="A",
             question_type=("Action Recognition",), benchmark="videomme"),
]


def test_read_videomme_parquet(tmp_path):
    path = tmp_path / "test-00000-of-00001.parquet"
    pd.DataFrame(VIDEOMME).to_parquet(path)
    assert read_videomme(path) == EXPECTED_VIDEOMME


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_read_videomme_json_and_jsonl(tmp_path, suffix):
    path = tmp_path / f"videomme{suffix}"
    write_json(path, VIDEOMME) if suffix == ".json" else write_jsonl(path, VIDEOMME)
    assert read_videomme(path) == EXPECTED_VIDEOMME


def test_read_mlvu(tmp_path):
    questions = read_mlvu(write_json(tmp_path / "1_plotQA.json", MLVU))
    assert questions == [
        Question(uid="1_plotQA-0", video_id="movie101_66",
                 question="What is the main character holding in the opening scene?",
                 options=("A phone", "An umbrella", "A letter", "A cup"), answer="C", question_type=("plotQA",),
                 benchmark="mlvu", duration_s=246.0),
        Question(uid="1_plotQA-1", video_id="needle_32", question="Which animal appears in the inserted clip?",
                 options=("Cat", "Horse", "Owl", "Fish"), answer="C", question_type=("needle",),
                 benchmark="mlvu", duration_s=467.5),
    ]


def test_read_egoschema_with_and_without_answers(tmp_path):
    questions_path = write_json(tmp_path / "questions.json", EGOSCHEMA)
    answers_path = write_json(tmp_path / "subset_answers.json", EGOSCHEMA_ANSWERS)
    first = Question(uid="0074f737-11cb-497d-8d07-77c3a8127391", video_id="0074f737-11cb-497d-8d07-77c3a8127391",
                     question="What is the overall goal of the person in the video?",
                     options=("Cleaning the kitchen", "Cooking a meal", "Repairing a bicycle", "Painting a wall",
                              "Sorting laundry"),
                     answer="B", benchmark="egoschema")
    with_answers = read_egoschema(questions_path, answers_path)
    assert with_answers[0] == first
    assert with_answers[1].answer is None  # not in the public subset
    assert with_answers[1].options == ("It speeds up", "It slows down", "It stays the same", "It stops midway",
                                       "It alternates")
    assert [q.answer for q in read_egoschema(questions_path)] == [None, None]


# ---------------------------------------------------------------- the flat form


def test_flat_round_trip(tmp_path):
    questions = read_lvbench(write_jsonl(tmp_path / "video_info.meta.jsonl", LVBENCH_LINES)) + [
        Question(uid="syn-1", video_id="synthetic_003", question="When does the red square appear?",
                 options=("Early", "Late"), answer=None, gt_spans=(Span(12.5, 20.25), Span(60.0, 61.0)),
                 benchmark="synthetic", duration_s=90.0, note="made up"),
    ]
    path = write_lvbench_flat(questions, tmp_path / "out" / "questions.jsonl")
    assert read_lvbench_flat(path) == questions
    assert sorted(p.name for p in path.parent.iterdir()) == ["questions.jsonl"]  # no temporary file left
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[0]) == {
        "uid": "0",
        "video_key": "7bGj1Q6W8Lo",
        "benchmark": "lvbench",
        "question": "What colour is the kite at the start?\n(A) Red\n(B) Blue\n(C) Green\n(D) Yellow",
        "answer": "B",
        "question_type": ["key information retrieval"],
        "time_reference": "00:15-00:19",
        "gt_spans": [[15.0, 19.0]],
        "duration": 4050.0,
        "note": None,
    }


def test_read_flat_minimal_line(tmp_path):
    # The fields a hand-written flat file needs; spans and note come from the time reference.
    line = {"uid": "q1", "video_key": "clip", "question": "Where?\n(A) Here\n(B) There", "answer": "B",
            "question_type": ["TG"], "time_reference": "01:00-01:30", "duration": 120}
    assert read_lvbench_flat(write_jsonl(tmp_path / "q.jsonl", [line])) == [
        Question(uid="q1", video_id="clip", question="Where?", options=("Here", "There"), answer="B",
                 question_type=("TG",), gt_spans=(Span(60.0, 90.0),), time_reference="01:00-01:30",
                 benchmark="lvbench", duration_s=120.0),
    ]


def test_write_replaces_an_existing_file(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text("old contents\n", encoding="utf-8")
    question = Question(uid="a", video_id="v", question="S?", options=("x", "y"), answer="A")
    write_lvbench_flat([question], path)
    assert read_lvbench_flat(path) == [question]


# ---------------------------------------------------------------- errors name the file, the place and the field

FLAT_OK = {"uid": "1", "video_key": "v", "question": "Q?\n(A) a\n(B) b\n(C) c\n(D) d", "answer": "A",
           "question_type": [], "time_reference": "00:01-00:05"}


def assert_error(error: pytest.ExceptionInfo, *parts: str) -> None:
    message = str(error.value)
    for part in parts:
        assert part in message, f"{part!r} not in {message!r}"


def test_error_invalid_json_on_line_3(tmp_path):
    path = tmp_path / "flat.jsonl"
    path.write_text(json.dumps(FLAT_OK) + "\n" + json.dumps({**FLAT_OK, "uid": "2"}) + "\n{\"uid\": \"3\",\n",
                    encoding="utf-8")
    with pytest.raises(QuestionFormatError) as error:
        read_lvbench_flat(path)
    assert_error(error, "flat.jsonl", "line 3", "not valid JSON")


def test_error_answer_not_among_the_options(tmp_path):
    path = write_jsonl(tmp_path / "flat.jsonl", [FLAT_OK, {**FLAT_OK, "uid": "2", "answer": "E"}])
    with pytest.raises(QuestionFormatError) as error:
        read_lvbench_flat(path)
    assert_error(error, "flat.jsonl", "line 2", "field 'answer'", "'E'", "A, B, C, D")


def test_error_missing_field_inside_lvbench_qa(tmp_path):
    lines = json.loads(json.dumps(LVBENCH_LINES))
    del lines[1]["qa"][0]["answer"]
    with pytest.raises(QuestionFormatError) as error:
        read_lvbench(write_jsonl(tmp_path / "video_info.meta.jsonl", lines))
    assert_error(error, "video_info.meta.jsonl", "line 2", "field 'qa[0].answer'", "missing")


def test_error_missing_video_key(tmp_path):
    line = {key: value for key, value in FLAT_OK.items() if key != "video_key"}
    with pytest.raises(QuestionFormatError) as error:
        read_lvbench_flat(write_jsonl(tmp_path / "flat.jsonl", [line]))
    assert_error(error, "flat.jsonl", "line 1", "field 'video_key'", "missing")


def test_error_question_without_options(tmp_path):
    with pytest.raises(QuestionFormatError) as error:
        read_lvbench_flat(write_jsonl(tmp_path / "flat.jsonl", [{**FLAT_OK, "question": "Q? A or B"}]))
    assert_error(error, "line 1", "field 'question'", "no options")


def test_error_mlvu_answer_not_a_candidate(tmp_path):
    records = json.loads(json.dumps(MLVU))
    records[1]["answer"] = "Dog"
    with pytest.raises(QuestionFormatError) as error:
        read_mlvu(write_json(tmp_path / "2_needle.json", records))
    assert_error(error, "2_needle.json", "record 1", "field 'answer'", "'Dog'")


def test_error_longvideobench_choice_out_of_range(tmp_path):
    records = json.loads(json.dumps(LONGVIDEOBENCH))
    records[0]["correct_choice"] = 4  # only four candidates
    with pytest.raises(QuestionFormatError) as error:
        read_longvideobench(write_json(tmp_path / "lvb_val.json", records))
    assert_error(error, "lvb_val.json", "record 0", "field 'correct_choice'", "0..3")


def test_error_videomme_option_labelled_out_of_order(tmp_path):
    records = json.loads(json.dumps(VIDEOMME))
    records[1]["options"] = ["A. Waves.", "C. Sits down.", "B. Opens a book.", "D. Lights a candle."]
    with pytest.raises(QuestionFormatError) as error:
        read_videomme(write_json(tmp_path / "videomme.json", records))
    assert_error(error, "videomme.json", "record 1", "field 'options'", "option B")


def test_error_egoschema_answer_index_out_of_range(tmp_path):
    questions_path = write_json(tmp_path / "questions.json", EGOSCHEMA)
    answers_path = write_json(tmp_path / "subset_answers.json", {"0074f737-11cb-497d-8d07-77c3a8127391": 5})
    with pytest.raises(QuestionFormatError) as error:
        read_egoschema(questions_path, answers_path)
    assert_error(error, "subset_answers.json", "0074f737-11cb-497d-8d07-77c3a8127391", "0..4")


def test_error_duplicate_uid(tmp_path):
    path = write_jsonl(tmp_path / "flat.jsonl", [FLAT_OK, {**FLAT_OK, "video_key": "w"}])
    with pytest.raises(QuestionFormatError) as error:
        read_lvbench_flat(path)
    assert_error(error, "line 2", "field 'uid'", "line 1")


def test_error_empty_file(tmp_path):
    path = tmp_path / "flat.jsonl"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(QuestionFormatError, match="no questions"):
        read_lvbench_flat(path)


def test_question_checks_its_answer():
    with pytest.raises(ValueError, match="'answer'"):
        Question(uid="1", video_id="v", question="Q?", options=("a", "b"), answer="C")


# ---------------------------------------------------------------- dispatch


def test_read_questions_detects_each_shape(tmp_path):
    files = {
        "lvbench": write_jsonl(tmp_path / "video_info.meta.jsonl", LVBENCH_LINES),
        "lvbench_flat": write_jsonl(tmp_path / "flat.jsonl", [FLAT_OK]),
        "longvideobench": write_json(tmp_path / "lvb_val.json", LONGVIDEOBENCH),
        "mlvu": write_json(tmp_path / "1_plotQA.json", MLVU),
        "egoschema": write_json(tmp_path / "questions.json", EGOSCHEMA),
        "videomme": tmp_path / "videomme.parquet",
    }
    pd.DataFrame(VIDEOMME).to_parquet(files["videomme"])
    for name, path in files.items():
        assert detect_format(path) == name
    assert [q.uid for q in read_questions(files["mlvu"])] == ["1_plotQA-0", "1_plotQA-1"]
    assert [q.benchmark for q in read_questions(files["longvideobench"], "longvideobench")] == ["longvideobench"] * 2
    answers = write_json(tmp_path / "subset_answers.json", EGOSCHEMA_ANSWERS)
    assert [q.answer for q in read_questions(files["egoschema"], answers_path=answers)] == ["B", None]


def test_read_questions_unknown_shape_and_name(tmp_path):
    path = write_json(tmp_path / "other.json", [{"prompt": "hi", "label": 1}])
    with pytest.raises(QuestionFormatError) as error:
        read_questions(path)
    assert_error(error, "other.json", "label, prompt", "lvbench")
    with pytest.raises(QuestionFormatError, match="unknown benchmark 'nextqa'"):
        read_questions(path, "nextqa")


# ---------------------------------------------------------------- options, fixed range, prompt


def test_parse_options_with_extra_whitespace():
    text = "  Which tool is used?  \n\n(A)   a hammer  \n   (B)\ta   long\n      wrapped saw\n\n(C) glue   \n"
    assert parse_options(text) == ("Which tool is used?", ("a hammer", "a long wrapped saw", "glue"))


def test_parse_options_out_of_order():
    with pytest.raises(ValueError, match="in order"):
        parse_options("Q?\n(A) a\n(C) c")


@pytest.mark.parametrize(
    ("stem", "fixed"),
    [
        ("What is shown between 12:34 and 12:50?", True),
        ("What does the host say at 01:02:03?", True),
        ("Around 5:07, who enters?", True),
        ("What is the aspect ratio, 16:9 or 4:3?", False),
        ("How many goals are scored in total?", False),
        ("Which score is shown, 123:45?", False),
    ],
)
def test_fixed_range(stem, fixed):
    assert Question(uid="1", video_id="v", question=stem, options=("a", "b"), answer=None).fixed_range is fixed


def test_fixed_range_ignores_times_in_options():
    question = Question(uid="1", video_id="v", question="When does the goal happen?",
                        options=("00:10-00:20", "05:00-05:10"), answer="A")
    assert not question.fixed_range


def test_prompt_text_and_option_text():
    question = Question(uid="1", video_id="v", question="What colour is the kite at the start?",
                        options=("Red", "Blue", "Green", "Yellow"), answer="B")
    assert question.prompt_text() == "What colour is the kite at the start?\n(A) Red\n(B) Blue\n(C) Green\n(D) Yellow"
    assert question.letters == ("A", "B", "C", "D")
    assert question.option_text("C") == "Green"
    with pytest.raises(ValueError, match="no option 'E'"):
        question.option_text("E")
