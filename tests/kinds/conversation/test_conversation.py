"""The conversation benchmark: reading the RecLLMSim files (JSON, array, JSONL, ZIP) and the statistics."""
from __future__ import annotations

import io
import json
import math
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from kinds import stats
from kinds.conversation import format as conv
from kinds.conversation import metrics
from kinds.conversation.format import Conversation, intent_label, read_any, validate
from kinds.conversation.result import statistics
from kinds.readers.limits import Limits

SAMPLE = Path(__file__).resolve().parents[4] / "shared" / "data" / "human_vs_agent" / "sample"
needs_data = pytest.mark.skipif(not SAMPLE.is_dir(), reason=f"the real conversation sample is not at {SAMPLE}")


# --- helpers -----------------------------------------------------------------------------------

def sample_files() -> list[Path]:
    return sorted(SAMPLE.rglob("*.json"))


def make_zip(members: dict[str, bytes]) -> io.BytesIO:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    buf.seek(0)
    return buf


def sample_zip() -> io.BytesIO:
    return make_zip({f.relative_to(SAMPLE).as_posix(): f.read_bytes() for f in sample_files()})


def dumps(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def turns(user_intents, hallucinations=None, lengths=None, satisfaction=None) -> list[dict]:
    """A history of len(user_intents) exchanges with the given user intents and assistant flags."""
    history = []
    for i, intent in enumerate(user_intents):
        user = {"role": "user", "content": "x" * (lengths[i] if lengths else 5)}
        if intent is not None:
            user["intent"] = intent
        assistant = {"role": "assistant", "content": "reply"}
        if hallucinations is not None and hallucinations[i] is not None:
            assistant["hallucination"] = hallucinations[i]
        if satisfaction is not None and satisfaction[i] is not None:
            assistant["satisfaction"] = satisfaction[i]
        history += [user, assistant]
    return history


def agent(task, history, ratings) -> Conversation:
    return Conversation("agent", task, "a.json", history, ratings, {})


def human(task, history, questionnaire=None) -> Conversation:
    return Conversation("human", task, "h.json", history, {}, questionnaire or {})


def read(data: bytes | io.BytesIO, name: str):
    stream = data if isinstance(data, io.BytesIO) else io.BytesIO(data)
    return read_any(stream, name)


def messages(report) -> str:
    return "\n".join(p.message for p in report.problems)


# --- the real sample -----------------------------------------------------------------------------

EXPECTED_AGENT_TASKS = {"travel planning": 4, "recipe planning": 2, "preparing gifts": 2,
                        "skills learning planning": 2}
EXPECTED_HUMAN_TASKS = {"travel planning": 4, "skills learning planning": 4}


@needs_data
def test_real_files_one_by_one():
    found = []
    for path in sample_files():
        name = path.relative_to(SAMPLE).as_posix()
        report, convs = read(path.read_bytes(), name)
        assert report.ok, messages(report)
        assert len(convs) == 1 and convs[0].path == name
        found.append(convs[0])
    assert len(found) == 18
    sources = Counter(c.source for c in found)
    assert sources == {"agent": 10, "human": 8}
    assert Counter(c.task for c in found if c.source == "agent") == EXPECTED_AGENT_TASKS
    assert Counter(c.task for c in found if c.source == "human") == EXPECTED_HUMAN_TASKS
    by_path = {c.path: c for c in found}
    assert by_path["LLM_agent_user/new travel planning/0.json"].task == "travel planning"
    assert by_path["human_exp_V2/User_0/技能学习规划/0.json"].source == "human"
    assert by_path["real_human_user/User_0/旅行规划/6.json"].questionnaire == {
        "Memorization": 0, "Detail": 2, "Availability": 2, "Diversity": 2}
    assert by_path["LLM_agent_user/travel planning/0.json"].ratings["Preference Alignment"] == 2.0
    assert by_path["LLM_agent_user/travel planning/0.json"].turns == 7


@needs_data
def test_real_files_as_zip_and_statistics():
    report, convs = read(sample_zip(), "sample.zip")
    assert report.ok, messages(report)
    assert report.summary == {"conversations": 18, "by_source": {"agent": 10, "human": 8},
                              "by_task": {"travel planning": 8, "recipe planning": 2, "preparing gifts": 2,
                                          "skills learning planning": 6}}
    assert validate(sample_zip()).summary == report.summary
    doc = statistics(convs)
    assert doc["sources"]["agent"] == {"conversations": 10, "by_task": EXPECTED_AGENT_TASKS}
    assert doc["sources"]["human"] == {"conversations": 8, "by_task": EXPECTED_HUMAN_TASKS}
    assert sum(r["conversations"] for r in doc["by_turns"]["agent"]) == 10
    assert set(doc["ratings"]["agent"]) >= {"Preference Alignment", "Role-Playing Completeness"}
    for source in ("agent", "human"):
        assert math.isclose(sum(doc["intents"][source].values()), 1.0)
        assert set(doc["intents"][source]) <= set(conv.INTENTS)
    assert doc["hallucination_rate"] == {"agent": 0.0, "human": 0.0}
    assert set(doc["questionnaire"]["human"]) == {"Memorization", "Detail", "Availability", "Diversity"}
    assert doc["satisfaction"]["human"]["n"] == 11 and doc["satisfaction"]["agent"] is None
    for key in ("turns", "user_message_length", "intents"):
        assert 0.0 <= doc["fidelity"][key] <= 1.0
    assert doc["fidelity"]["by_task"]["recipe planning"]["turns"] is None  # no human recipe conversation
    assert doc["fidelity"]["by_task"]["travel planning"]["intents"] is not None
    json.dumps(doc)  # JSON-ready


@needs_data
def test_array_and_jsonl_forms():
    objects = [json.loads(f.read_bytes()) for f in sample_files()]
    report, convs = read(dumps(objects), "all.json")
    # A bare array has no folder names: the source comes from 'rating' / 'questionnaire'.
    assert report.ok, messages(report)
    assert Counter(c.source for c in convs) == {"agent": 10, "human": 8}
    assert convs[0].path == "all.json[0]"
    lines = b"\n".join(dumps(o) for o in objects) + b"\n"
    report, convs = read(lines, "all.jsonl")
    assert report.ok, messages(report)
    assert len(convs) == 18
    assert convs[1].path == "all.jsonl:2"


@needs_data
def test_a_4000_file_zip_imports_whole():
    # its speed against the bare unzip-and-parse is bench/bench_conversation.py's target, not a bound here
    files = [(f.relative_to(SAMPLE), f.read_bytes()) for f in sample_files()]
    members = {}
    i = 0
    while len(members) < 4000:
        rel, data = files[i % len(files)]
        members[(rel.parent / f"{i}.json").as_posix()] = data
        i += 1
    report, convs = read(make_zip(members), "big.zip")
    assert report.ok and len(convs) == 4000


# --- labels --------------------------------------------------------------------------------------

def test_intent_labels():
    assert intent_label("规划") == "Planning"
    assert intent_label("推荐") == "Recommendation"
    assert intent_label("检索+推荐") == "Search & Recommendation"
    assert intent_label("Search & Recommendation") == "Search & Recommendation"
    assert intent_label("评估") == "Evaluation"
    assert intent_label("其它") == intent_label("其他") == intent_label("Others") == "Others"
    assert intent_label(["评估", "推荐"]) == ["Evaluation", "Recommendation"]
    assert intent_label("Brainstorm") == "Brainstorm"


def test_task_names():
    assert conv.task_name("旅行规划") == "travel planning"
    assert conv.task_name("new travel planning") == "travel planning"
    assert conv.task_name("菜谱规划") == conv.task_name("食谱规划") == "recipe planning"
    assert conv.task_name("礼物准备") == conv.task_name("准备礼物") == "preparing gifts"
    assert conv.task_name("技能学习规划") == "skills learning planning"
    assert conv.task_name("wedding planning") == "wedding planning"


def test_hallucination_forms():
    assert metrics.hallucination({"hallucination": {"hallucination": True, "memo": "x"}}) is True
    assert metrics.hallucination({"hallucination": False}) is False
    assert metrics.hallucination({"hallucination": "是"}) is True
    assert metrics.hallucination({"hallucination": "否"}) is False
    assert metrics.hallucination({"hallucination": "无法判断"}) is None
    assert metrics.hallucination({}) is None


def test_questionnaire_mapping_from_file():
    obj = {"task_type": "菜谱规划", "history": turns(["规划"]), "questionnaire": [
        {"summary": "Detail", "option": "简略"}, {"summary": "Availability", "option": "有一定参考"},
        {"summary": "Diversity", "option": "结果单一"}, {"summary": "Memorization", "option": "是"},
        {"summary": "Mood", "option": "好"}]}
    report, convs = read(dumps(obj), "real_human_user/User_3/菜谱规划/1.json")
    assert report.ok, messages(report)
    c = convs[0]
    assert (c.source, c.task) == ("human", "recipe planning")
    assert c.questionnaire == {"Detail": 0, "Availability": 1, "Diversity": 0, "Memorization": 1}


# --- hand-computed statistics ----------------------------------------------------------------------

def small_set() -> list[Conversation]:
    return [
        # agent, 2 turns: intents Planning, Others; no hallucination; lengths 10, 30
        agent("travel planning", turns(["Planning", "Others"], [{"hallucination": False}, {"hallucination": True}],
                                       [10, 30]), {"PA": 2, "Diversity": 1}),
        # agent, 3 turns: Planning x2, Search; lengths 10, 10, 30
        agent("recipe planning", turns(["Planning", "规划", "Search"], [False, False, False], [10, 10, 30]),
              {"PA": 1, "Diversity": 0, "Extra": 2}),
        # human, 2 turns: ["推荐","规划"], ["评估"]; 是, 无法判断; lengths 10, 30
        human("travel planning", turns([["推荐", "规划"], ["评估"]], ["是", "无法判断"], [10, 30], ["4", None]),
              {"Detail": 2, "Availability": 1, "Diversity": 2, "Memorization": 0}),
        # human, 2 turns: ["规划"], no intent; 否, 否; lengths 10, 10
        human("travel planning", turns([["规划"], None], ["否", "否"], [10, 10], ["5", "3"]),
              {"Detail": 1, "Availability": 2, "Diversity": 0, "Memorization": 1}),
    ]


def test_statistics_by_hand():
    doc = statistics(small_set())
    assert doc["sources"] == {
        "agent": {"conversations": 2, "by_task": {"travel planning": 1, "recipe planning": 1}},
        "human": {"conversations": 2, "by_task": {"travel planning": 2}}}
    assert doc["by_turns"]["agent"] == [
        {"turns": 2, "conversations": 1, "ratings": {"PA": 2.0, "Diversity": 1.0}},
        {"turns": 3, "conversations": 1, "ratings": {"PA": 1.0, "Diversity": 0.0, "Extra": 2.0}}]
    assert doc["by_turns"]["human"] == [{"turns": 2, "conversations": 2, "ratings": {}}]
    assert doc["ratings"]["agent"] == {"PA": 1.5, "Diversity": 0.5, "Extra": 2.0}
    assert doc["ratings"]["human"] == {}
    # agent user turns: Planning 3, Others 1, Search 1
    assert doc["intents"]["agent"] == pytest.approx({"Planning": 0.6, "Others": 0.2, "Search": 0.2})
    # human labels: Recommendation, Planning, Evaluation, Planning (a turn without intent counts nothing)
    assert doc["intents"]["human"] == pytest.approx({"Planning": 0.5, "Recommendation": 0.25, "Evaluation": 0.25})
    # agent: 1 of 5 hallucinate; human: 是, 否, 否 known (无法判断 excluded) -> 1/3
    assert doc["hallucination_rate"]["agent"] == pytest.approx(0.2)
    assert doc["hallucination_rate"]["human"] == pytest.approx(1 / 3)
    assert doc["questionnaire"]["human"] == {"Detail": 1.5, "Availability": 1.5, "Diversity": 1.0,
                                             "Memorization": 0.5}
    assert doc["questionnaire"]["agent"] == {}
    assert doc["satisfaction"]["agent"] is None
    assert doc["satisfaction"]["human"] == {"mean": 4.0, "n": 3, "by_turn": [
        {"turn": 1, "mean": 4.5, "n": 2}, {"turn": 2, "mean": 3.0, "n": 1}]}


def test_fidelity_by_hand():
    fid = statistics(small_set())["fidelity"]
    # turns: agent {2: 1, 3: 1}, human {2: 2}
    assert fid["turns"] == pytest.approx(stats.js_divergence_bits([1, 1], [2, 0]))
    p, m = [0.5, 0.5], [0.75, 0.25]
    expected = 0.5 * (sum(a * math.log2(a / b) for a, b in zip(p, m)) + 1 * math.log2(1 / 0.75))
    assert fid["turns"] == pytest.approx(expected)
    # lengths: agent 10,30,10,10,30 ; human 10,30,10,10 -> joint range [10, 30], first and last bin only
    q = [3 / 5, 2 / 5]
    r = [3 / 4, 1 / 4]
    mid = [(a + b) / 2 for a, b in zip(q, r)]
    expected = 0.5 * sum(a * math.log2(a / c) for a, c in zip(q, mid)) + 0.5 * sum(
        b * math.log2(b / c) for b, c in zip(r, mid))
    assert fid["user_message_length"] == pytest.approx(expected)
    # intents: agent Planning 3, Others 1, Search 1; human Planning 2, Recommendation 1, Evaluation 1
    # order: Evaluation, Others, Planning, Recommendation, Search
    a = [0, 1, 3, 0, 1]
    h = [1, 0, 2, 1, 0]
    assert fid["intents"] == pytest.approx(stats.js_divergence_bits(a, h))
    assert 0 < fid["intents"] < 1
    # per task: no human recipe conversation -> None everywhere
    assert fid["by_task"]["recipe planning"] == {"turns": None, "user_message_length": None, "intents": None}
    # travel: agent 2 turns, human 2 turns -> identical turn distributions
    assert fid["by_task"]["travel planning"]["turns"] == 0.0


def test_fidelity_identical_and_disjoint():
    same = [agent("t", turns(["Planning", "Others"], None, [5, 50]), {}),
            human("t", turns(["规划", "其他"], None, [5, 50]))]
    fid = statistics(same)["fidelity"]
    assert fid["turns"] == 0.0 and fid["user_message_length"] == 0.0 and fid["intents"] == 0.0
    disjoint = [agent("t", turns(["Planning"], None, [5]), {}),
                human("t", turns(["推荐", "推荐"], None, [100, 100]))]
    fid = statistics(disjoint)["fidelity"]
    assert fid["turns"] == pytest.approx(1.0)
    assert fid["user_message_length"] == pytest.approx(1.0)
    assert fid["intents"] == pytest.approx(1.0)


def test_statistics_of_one_source_only():
    doc = statistics([agent("travel planning", turns(["Planning"], [None]), {"PA": 2})])
    assert doc["sources"]["human"] == {"conversations": 0, "by_task": {}}
    assert doc["hallucination_rate"] == {"agent": None, "human": None}
    assert doc["fidelity"]["turns"] is None and doc["fidelity"]["intents"] is None
    assert doc["intents"]["human"] == {}


# --- errors --------------------------------------------------------------------------------------

def test_not_a_conversation_inside_zip_names_the_member():
    buf = make_zip({"LLM_agent_user/travel planning/0.json": dumps({"task": "travel planning",
                                                                   "history": turns(["Planning"])}),
                    "real_human_user/User_0/旅行规划/6.json": dumps({"task_type": "旅行规划", "questionnaire": []})})
    report, convs = read(buf, "up.zip")
    assert not report.ok and convs == []
    assert report.problems[0].message.startswith("real_human_user/User_0/旅行规划/6.json: 'history' is missing")
    assert report.problems[0].path == "history"


def test_broken_json_inside_zip():
    buf = make_zip({"LLM_agent_user/recipe planning/3.json": b'{"task": "recipe planning", "history": [}'})
    report, convs = read(buf, "up.zip")
    assert not report.ok and convs == []
    assert "LLM_agent_user/recipe planning/3.json is not valid JSON at line 1" in report.problems[0].message


def test_bad_turns_are_located():
    obj = {"task": "travel planning", "source": "agent",
           "history": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "x"}, "oops"]}
    report, _convs = read(dumps(obj), "one.json")
    paths = [p.path for p in report.problems]
    assert paths == ["history[1].role", "history[2]"]
    assert all(p.message.startswith("one.json: ") for p in report.problems)


def test_non_json_upload():
    report, convs = read(b"this is not json at all", "notes.txt")
    assert not report.ok and convs == []
    assert "notes.txt is not valid JSON" in messages(report)
    report, _c = read(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "image.png")
    assert not report.ok and "UTF-8" in messages(report)
    report, _c = read(b"", "empty.json")
    assert "empty" in messages(report)
    report, _c = read(dumps([1, 2]), "numbers.json")
    assert "numbers.json[0]: a conversation must be a JSON object" in messages(report)


def test_missing_source_and_task_without_folders():
    report, _c = read(dumps({"history": turns(["Planning"])}), "0.json")
    text = messages(report)
    assert "simulated or a real person" in text and "the task is missing" in text


def test_empty_zip_and_skipped_members():
    report, convs = read(make_zip({}), "empty.zip")
    assert not report.ok and "no .json files" in messages(report)
    buf = make_zip({"__MACOSX/LLM_agent_user/t/._0.json": b"\x00\x05\x16\x07",
                    "LLM_agent_user/t/._1.json": b"\x00\x05",
                    "readme.txt": b"hello",
                    "LLM_agent_user/preparing gifts/0.json": dumps({"history": turns(["Planning"]),
                                                                    "rating": {"PA": 1}})})
    report, convs = read(buf, "mac.zip")
    assert report.ok, messages(report)
    assert [(c.source, c.task, c.path) for c in convs] == [
        ("agent", "preparing gifts", "LLM_agent_user/preparing gifts/0.json")]


def test_zip_bomb_guard(monkeypatch):
    monkeypatch.setenv("LIMIT_ZIP_EXPANDED_MB", str(10_000 / (1024 * 1024)))
    buf = make_zip({"LLM_agent_user/travel planning/0.json": b" " * 20_000 + dumps({"history": []})})
    assert len(buf.getvalue()) < 1000  # compresses well: a small upload that expands past the limit
    report, convs = read(buf, "bomb.zip")
    assert not report.ok and convs == []
    assert "more than the limit" in messages(report)


def test_zip_bomb_defaults_stop_a_member_not_a_large_archive():
    limits = Limits()
    assert limits.zip_member_bytes == 100 * 1024 * 1024 and limits.zip_ratio == 200
    assert limits.zip_expanded_bytes == 10 * 1024 ** 3  # an outer bound on the disk and time one archive takes


def test_corrupt_zip():
    report, convs = read(b"PK\x03\x04garbage", "broken.zip")
    assert not report.ok and "not a valid ZIP" in messages(report)


def test_bom_and_validate_summary():
    obj = {"task": "技能学习规划", "history": turns(["规划", "推荐"]), "rating": {"PA": 2, "note": "text"}}
    stream = io.BytesIO(b"\xef\xbb\xbf" + dumps(obj))
    report = validate(stream)
    assert report.ok, messages(report)
    assert report.summary == {"conversations": 1, "by_source": {"agent": 1},
                              "by_task": {"skills learning planning": 1}}
    _r, convs = read(dumps(obj), "x.json")
    assert convs[0].ratings == {"PA": 2.0}  # non-numeric rating fields are left out


def test_file_that_is_not_utf8_names_the_byte_and_offset():
    from kinds.conversation import format as conversation
    raw = '{"history": [{"role": "user", "content": "旅行"}]}'.encode("gbk")
    report, conversations = conversation.read_any(io.BytesIO(raw), "chat.json")
    assert conversations == []
    message = report.problems[0].message
    assert message.startswith("chat.json is not valid UTF-8 JSON: byte 0xC2 at byte offset 42")  # 13 + 17 + 12 ASCII bytes before it
    bom = conversation.read_any(io.BytesIO(b"\xef\xbb\xbf" + raw.replace("旅行".encode("gbk"), b"x")), "c.json")[0]
    assert bom.problems[0].path == "source"  # the BOM is dropped and the JSON read


def test_counts_are_charted_on_whole_numbers():
    from kinds.conversation.figures import turns_figure
    from kinds.figures import count_axis

    assert [count_axis(most)["dtick"] for most in (0, 3, 8, 9, 17, 41, 100, 7999)] == [1, 1, 1, 2, 5, 10, 20, 1000]
    figure = turns_figure({"by_turns": {"agent": [{"turns": 2, "conversations": 3}],
                                        "human": [{"turns": 3, "conversations": 1}]}})
    axis = figure["layout"]["yaxis"]
    assert axis["dtick"] == 1 and axis["tickformat"] == ",d" and axis["title"]["text"]
