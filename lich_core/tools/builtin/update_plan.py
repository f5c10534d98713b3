"""update_plan: the model states its plan for the task, and updates it as steps get done.

Neither seed has a plan tool; the name and the shape (`plan: [{step, status}]`, an optional
`explanation`, at most one step in progress) are Codex's `update_plan`, which models know, plus
ACP's optional `priority`. Every call carries the whole plan, which replaces the last one. The
tool changes nothing: it reports the plan to the run (ToolContext.report_plan), which emits it
as a `plan` event (lich_core.agent.events.PlanUpdate; tools do not import the agent), which the
ACP face sends as a `plan` session update; it returns a one-line summary. It is gated as `file/read`, the least privileged capability, because every builtin is
gated (`capabilities: []` turns it off with the rest).
"""

from __future__ import annotations

from typing import Any

from lich_core.errors import ToolError
from lich_core.tools.arguments import reject_unknown_arguments
from lich_core.tools.guard import capture_errors
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult

MAX_STEPS = 50
MAX_STEP_CHARS = 500
MAX_EXPLANATION_CHARS = 2_000
STATUSES = ("pending", "in_progress", "completed")
PRIORITIES = ("high", "medium", "low")
DEFAULT_PRIORITY = "medium"


def _entry(index: int, item: Any) -> dict[str, str]:
    where = f"plan[{index}]"
    if not isinstance(item, dict):
        raise ToolError(f"invalid_arg: {where} must be an object {{step, status}}")
    unknown = sorted(set(item) - {"step", "status", "priority"})
    if unknown:
        raise ToolError(
            f"invalid_arg: {where} has unknown field(s) {', '.join(unknown)} (known: step, status, priority)"
        )
    step = item.get("step")
    if not isinstance(step, str) or not step.strip():
        raise ToolError(f"invalid_arg: {where}.step must be a non-empty string")
    step = " ".join(step.split())
    if len(step) > MAX_STEP_CHARS:
        raise ToolError(f"invalid_arg: {where}.step is {len(step)} chars; at most {MAX_STEP_CHARS}")
    status = item.get("status")
    if status not in STATUSES:
        raise ToolError(
            f"invalid_arg: {where}.status must be one of {', '.join(STATUSES)}, not {status!r}"
        )
    priority = item.get("priority", DEFAULT_PRIORITY)
    if priority not in PRIORITIES:
        raise ToolError(
            f"invalid_arg: {where}.priority must be one of {', '.join(PRIORITIES)}, not {priority!r}"
        )
    return {"content": step, "status": status, "priority": priority}


def parse_plan(args: dict[str, Any]) -> tuple[tuple[dict[str, str], ...], str | None]:
    """The validated entries and explanation of a call (ToolError `invalid_arg:` otherwise)."""
    reject_unknown_arguments(TOOL.parameters, args)
    plan = args.get("plan")
    if not isinstance(plan, list) or not plan:
        raise ToolError("missing_arg: plan (a non-empty list of {step, status})")
    if len(plan) > MAX_STEPS:
        raise ToolError(f"invalid_arg: plan has {len(plan)} steps; at most {MAX_STEPS}")
    entries = tuple(_entry(index, item) for index, item in enumerate(plan))
    running = [entry["content"] for entry in entries if entry["status"] == "in_progress"]
    if len(running) > 1:
        raise ToolError(f"invalid_arg: {len(running)} steps are in_progress; at most one may be")
    explanation = args.get("explanation")
    if explanation is not None and not isinstance(explanation, str):
        raise ToolError("invalid_arg: explanation must be a string")
    explanation = (explanation or "").strip() or None
    if explanation is not None and len(explanation) > MAX_EXPLANATION_CHARS:
        raise ToolError(
            f"invalid_arg: explanation is {len(explanation)} chars; at most {MAX_EXPLANATION_CHARS}"
        )
    return entries, explanation


@capture_errors
async def update_plan(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    entries, explanation = parse_plan(args)
    if ctx.report_plan is not None:
        await ctx.report_plan(entries, explanation)
    done = sum(1 for entry in entries if entry["status"] == "completed")
    current = next(
        (entry["content"] for entry in entries if entry["status"] == "in_progress"), None
    )
    output = f"Plan updated: {done} of {len(entries)} steps completed"
    output += f"; in progress: {current}" if current else ""
    return ToolResult(ok=True, output=output, details={"plan": [dict(entry) for entry in entries]})


TOOL = FunctionTool(
    name="update_plan",
    description=(
        "Show the user your plan for a multi-step task; resend it whole as steps start or finish."
    ),
    parameters={
        "type": "object",
        "properties": {
            "plan": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_STEPS,
                "items": {
                    "type": "object",
                    "properties": {
                        "step": {
                            "type": "string",
                        },
                        "status": {"type": "string", "enum": list(STATUSES)},
                        "priority": {
                            "type": "string",
                            "enum": list(PRIORITIES),
                        },
                    },
                    "required": ["step", "status"],
                    "additionalProperties": False,
                },
            },
            "explanation": {
                "type": "string",
            },
        },
        "required": ["plan"],
        "additionalProperties": False,
    },
    run=update_plan,
    capability="file/read",
)
