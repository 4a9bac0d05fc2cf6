"""A custom rubric's CPU per judgment against the built-in personasteer rubric's, on 8,880 judgments.

Run: python bench/bench_rubric.py [--sessions 444] [--repeat 3] [--profile]. One dialogue file (444 sessions x 5
rounds x 2 methods x 2 questions = 8,880 judgments) is evaluated, whole, under the built-in `personasteer` rubric and
under a custom rubric of the same size (five dimensions 0-20 in the `lines` answer format, with a yes/no question; its
prompts are personasteer's with other labels, and its answer lines written by a loop over the dimensions), through the
same code as the dashboard and the CLI (the thread backend, pipeline/thread_backend.py: planning, prompts, the judge,
storing every judgment, the result document), each run in a new store, against tests/judge_server.py in a child process answering at once. After a
warm-up evaluation of a small file under each (not measured), the runs alternate, personasteer then custom, --repeat
times, in this one process; each is measured as this process's CPU time over the evaluation per judgment, and the
least of each rubric's runs is compared (as timeit does: other processes on the machine only ever add time). PASS:
the custom rubric within 1.10x of personasteer; exits 1 on FAIL.

It also times building the prompts alone for the same 8,880 judgments (best of --repeat): the legacy f-string builder
(tests/kinds/dialogue/legacy_prompts.py, the prompts before rubrics), personasteer's templates and the custom
rubric's. --profile adds where the custom rubric's run spent its CPU in kinds/rubrics/ (cProfile, own time).
"""
from __future__ import annotations

import argparse
import copy
import cProfile
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_cache import write_file  # noqa: E402
from bench.local_judge import judge_process  # noqa: E402
from kinds import registry, rubrics  # noqa: E402
from kinds.dialogue import prompts, rubric_store  # noqa: E402
from kinds.dialogue.format import iter_sessions  # noqa: E402
from pipeline.evaluations import Evaluations, create_evaluation  # noqa: E402
from pipeline.ingest import ingest  # noqa: E402
from pipeline.thread_backend import ThreadBackend  # noqa: E402
from storage.store import Store  # noqa: E402
from tests.kinds.dialogue import legacy_prompts  # noqa: E402

MAX_RATIO = 1.10
CONCURRENCY = 64
# personasteer's labels and keys -> the custom rubric's
RENAMED = (("Style", "Tone"), ("Content", "Substance"), ("Naturalness", "Fluency"), ("Personalization", "Fit"),
           ("Conversation", "Flow"))


def custom_rubric() -> rubrics.Rubric:
    """A rubric the size of personasteer's: its prompts with other dimension names, the answer lines made by a loop
    over the dimensions, no boxed total (the headline is the sum, rescaled), and the same yes/no question."""
    document = copy.deepcopy(dict(rubrics.builtin().document))
    document.update(id="bench-custom", version="1", title="Bench custom")
    document["answer"] = {"format": "lines"}
    lines = "\n".join(f"{old}: n/20" for old, _new in RENAMED) + "\nTotal: \\boxed{N}"
    loop = "{% for d in dimensions %}{% if not loop.first %}\n{% endif %}{{ d.label }}: n/{{ d.max }}{% endfor %}"
    for language, parts in document["prompts"].items():
        system = parts["system"].replace(lines, loop)
        for total, none in ((" and N, the sum of the five scores, is an integer from 0 to 100", ""),
                            ("six lines", "five lines"), ("，N 是五项之和，为 0 到 100 的整数", ""), ("六行", "五行")):
            system = system.replace(total, none)
        user = parts["user"].replace("six lines", "five lines").replace("六行", "五行").replace("和 Total: \\boxed{N} ", "")
        for old, new in RENAMED:
            system, user = system.replace(old, new), user.replace(old, new)
        document["prompts"][language] = {"system": system, "user": user.replace(" and Total: \\boxed{N}", "")}
    for dimension, (_old, new) in zip(document["dimensions"], RENAMED):
        dimension.update(key=new.lower(), label={"en": new, "zh": new, "ko": new})
    return rubrics.read(json.dumps(document, ensure_ascii=False))


def run_once(url: str, source: Path, rubric: rubrics.Rubric, profile: bool) -> dict:
    """Evaluate the file once under a rubric, in a new store: CPU time, judgments and (when asked) the profile."""
    with tempfile.TemporaryDirectory(prefix="bench_rubric_") as tmp:
        folder = Path(tmp)
        env = {"JUDGE_BASE_URL": url, "JUDGE_API_KEY": "bench", "JUDGE_MODEL": "bench",
               "JUDGE_CONCURRENCY": str(CONCURRENCY)}
        store = Store(folder / "db.sqlite", registry.tables())
        runner = ThreadBackend(Evaluations(store, folder / "uploads", folder / "results", lambda: env))
        if not rubric.builtin:
            rubric_store.add(store, rubric)
        with source.open("rb") as f:
            upload = ingest(f, source.name, store, folder / "uploads")
        evaluation = create_evaluation(store, upload["id"], environ=env, options={"rubric": rubric.sha256})
        profiler = cProfile.Profile(time.process_time) if profile else None
        cpu = time.process_time()
        if profiler:
            profiler.enable()
        runner.run(evaluation["id"])
        if profiler:
            profiler.disable()
        cpu = time.process_time() - cpu
        record = store.get_evaluation(evaluation["id"])
        store.close()
    result = record.get("result") or {}
    if record["status"] != "done" or result.get("rubric", {}).get("sha256") != rubric.sha256:
        raise SystemExit(f"the evaluation under {rubric.id} ended {record['status']}: {record['error']}")
    unparsed = sum(m["unparsed"] for m in result["methods"].values())
    if unparsed:
        raise SystemExit(f"{unparsed} answers under {rubric.id} did not parse: the bench would not compare like with like")
    return {"cpu": cpu, "judgments": result["judge"]["calls"], "profiler": profiler}


def contexts(source: Path) -> list[tuple[str, prompts.DialogueContext]]:
    """Every judgment of the file as (question, what the judge sees), in the order the dialogue kind asks them."""
    found = []
    with source.open("rb") as f:
        for session in iter_sessions(f):
            for position, turn in enumerate(session.rounds):
                for method in turn.responses:
                    history = [(r.user_message, r.responses[method]) for r in session.rounds[:position]]
                    ctx = prompts.DialogueContext(session.user_profile, session.user_personality, history,
                                                  turn.user_message, turn.responses[method])
                    found += [(question, ctx) for question in prompts.MODES]
    return found


def prompt_cost(items: list[tuple[str, prompts.DialogueContext]], repeat: int, custom: rubrics.Rubric) -> dict:
    """CPU seconds to build every judgment's prompt, best of `repeat`, by builder."""
    builders = {"legacy f-strings": lambda q, c: legacy_prompts.prompt(q, c, "en"),
                "personasteer templates": lambda q, c: prompts.prompt(q, c, "en"),
                "custom templates": lambda q, c: prompts.prompt(q, c, "en", custom)}
    best = dict.fromkeys(builders, float("inf"))
    for _run in range(max(1, repeat)):
        for name, build in builders.items():
            started = time.process_time()
            for question, ctx in items:
                build(question, ctx)
            best[name] = min(best[name], time.process_time() - started)
    return best


def rubric_functions(profiler: cProfile.Profile, top: int = 8) -> list[tuple[str, float]]:
    """The functions of kinds/rubrics/ and jinja2 with the most own time, and their share of the whole."""
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    everything = sum(own for (_calls, _primitive, own, _cumulative, _callers) in stats.values()) or 1.0
    mine = [(f"{Path(filename).name}:{name}", own / everything)
            for (filename, _line, name), (_calls, _primitive, own, _cumulative, _callers) in stats.items()
            if "kinds/rubrics" in filename or "jinja2" in filename or filename == "<template>"]
    return sorted(mine, key=lambda item: -item[1])[:top]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 on PASS, 1 on FAIL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=444, help="20 judgments each (default 444: 8,880)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per rubric, alternating; the least is compared")
    parser.add_argument("--profile", action="store_true", help="also show where the custom rubric's run spent CPU")
    args = parser.parse_args(argv)
    builtin, custom = rubrics.builtin(), custom_rubric()
    cpu: dict[str, list[float]] = {builtin.id: [], custom.id: []}
    with tempfile.TemporaryDirectory(prefix="bench_rubric_file_") as tmp:
        source = Path(tmp) / "dialogues.jsonl"
        write_file(source, args.sessions)
        items = contexts(source)
        warm = Path(tmp) / "warm-up.jsonl"
        write_file(warm, 10, tag=" (warm-up)")
        with judge_process(0.0) as url:
            for rubric in (builtin, custom):  # loads what the first evaluation loads (pandas, ...), not measured
                run_once(url, warm, rubric, profile=False)
            for _run in range(max(1, args.repeat)):
                for rubric in (builtin, custom):
                    run = run_once(url, source, rubric, profile=False)
                    cpu[rubric.id].append(run["cpu"] / run["judgments"])
            profiled = run_once(url, source, custom, profile=True) if args.profile else None
        built = prompt_cost(items, args.repeat, custom)
    judgments = len(items)
    base, mine = min(cpu[builtin.id]), min(cpu[custom.id])
    ratio = mine / base
    print(f"{judgments} judgments per run; judge: child process answering at once, concurrency {CONCURRENCY}")
    for rubric_id, values in cpu.items():
        print(f"{rubric_id:>13}: CPU {min(values) * 1000:.3f} ms per judgment (runs: "
              f"{', '.join(f'{v * 1000:.3f}' for v in values)})")
    print(f"ratio custom / personasteer: {ratio:.3f} (limit {MAX_RATIO})")
    print("building the prompts alone, per judgment:")
    for name, seconds in built.items():
        print(f"  {name:>22}: {seconds / judgments * 1e6:.1f} us")
    if profiled:
        print("the custom rubric's run, own CPU time of rubric and template functions (shares of the whole run):")
        for function, share in rubric_functions(profiled["profiler"]):
            print(f"  {share:6.1%}  {function}")
    passed = ratio <= MAX_RATIO
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
