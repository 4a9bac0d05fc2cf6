"""The page "How human are simulated users" (humanness.py): `GET /conversation/humanness?simulated=<evaluation
id>&real=<evaluation id>`, the simulated users' conversations of one conversation evaluation against the real
people's of another (or the same), on the label sets chosen by `simulated_labels` and `real_labels` (by default the
judge's when the simulated side has them, else GPT-4o's; the real side the same set when it has it). `format=json`
or `format=csv` downloads the figures."""
from __future__ import annotations

from flask import Blueprint, jsonify, render_template, request

from kinds import host
from kinds.conversation import humanness
from kinds.conversation.format import Conversation, read_any
from kinds.conversation.label_sets import label_sets
from kinds.kind import Job, open_file
from translations import _

bp = Blueprint("conversation_humanness", __name__)
SIDES = {"simulated": "agent", "real": "human"}  # which conversations of an evaluation each side reads
PREFERRED = ("judge", "gpt", "human")  # the label set chosen when none is asked for, in this order
FINISHED = ("done", "incomplete")


class HumannessProblem(ValueError):
    """A request the page cannot answer, with a message for the user."""


def side_label_sets(evaluation_id: str, source: str) -> tuple[dict, dict[str, list[dict | None]]]:
    """An evaluation's record and its label sets restricted to the conversations of one source (those sets that label
    any of them); HumannessProblem when it is no finished conversation evaluation or has no such conversation."""
    store, site = host.store(), host.site()
    record = store.get_evaluation(evaluation_id, with_result=False) if evaluation_id else None
    if record is None:
        raise HumannessProblem(_("No evaluation has the id %(ids)s.", ids=evaluation_id or "—"))
    if record["kind"] != "conversation" or record["status"] not in FINISHED:
        raise HumannessProblem(_("Evaluation %(id)s is not a finished conversation evaluation.", id=evaluation_id))
    upload = store.get_upload(record["upload_id"])
    if upload is None:
        raise HumannessProblem(_("The upload of evaluation %(id)s is no longer kept.", id=evaluation_id))
    file = site.file_of(upload)
    with open_file(file) as stream:
        conversations: list[Conversation] = read_any(stream, upload["filename"])[1]
    keep = [i for i, c in enumerate(conversations) if c.source == source]
    if not keep:
        raise HumannessProblem(_("Evaluation %(id)s has no conversations of %(source)s.", id=evaluation_id,
                                 source=_("simulated users") if source == "agent" else _("real people")))
    sets = label_sets(Job(record, upload, file, site), conversations)
    return record, {name: [labels[i] for i in keep] for name, labels in sets.items()
                    if any(labels[i] is not None for i in keep)}


def _chosen(asked: str | None, sets: dict, fallback: tuple[str, ...], evaluation_id: str) -> str:
    if asked:
        if asked not in sets:
            raise HumannessProblem(_("Evaluation %(id)s has no label set %(name)s on these conversations; it has "
                                     "%(names)s.", id=evaluation_id, name=asked, names=", ".join(sets) or "—"))
        return asked
    found = next((name for name in (*fallback, *sets) if name in sets), None)
    if found is None:
        raise HumannessProblem(_("Evaluation %(id)s has no behaviour labels on these conversations: start an "
                                 "evaluation with the judge's labelling (`label`), or upload labelled "
                                 "conversations.", id=evaluation_id))
    return found


@bp.get("/conversation/humanness")
def page():
    """The comparison as a page, or as JSON / CSV with `format`; a 400 that says why when it cannot be made."""
    ids = {side: (request.args.get(side) or "").strip()[:64] for side in SIDES}
    try:
        sim_record, sim_sets = side_label_sets(ids["simulated"], SIDES["simulated"])
        real_record, real_sets = side_label_sets(ids["real"], SIDES["real"])
        sim_name = _chosen(request.args.get("simulated_labels"), sim_sets, PREFERRED, ids["simulated"])
        real_name = _chosen(request.args.get("real_labels"), real_sets, (sim_name, *PREFERRED), ids["real"])
    except HumannessProblem as exc:
        if request.args.get("format") in ("json", "csv"):
            return jsonify({"error": str(exc)}), 400
        return render_template("conversation/humanness.html", error=str(exc), ids=ids), 400
    result = humanness.behaviour_gap(sim_sets[sim_name], real_sets[real_name])
    chosen = {"simulated": {"evaluation": ids["simulated"], "label_set": sim_name},
              "real": {"evaluation": ids["real"], "label_set": real_name}}
    if request.args.get("format") == "json":
        return jsonify({**chosen, **result})
    if request.args.get("format") == "csv":
        header, rows = humanness.table(result)
        return host.csv_response(header, rows, f"humanness-{ids['simulated'][:8]}-{ids['real'][:8]}.csv")
    return render_template("conversation/humanness.html", error=None, ids=ids, result=result, chosen=chosen,
                           sets={"simulated": list(sim_sets), "real": list(real_sets)},
                           records={"simulated": sim_record, "real": real_record},
                           labels={d.key: d.label for d in humanness.DIMENSIONS})
