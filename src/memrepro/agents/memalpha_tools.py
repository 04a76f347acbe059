"""Mem-α's memory tools as the model sees and calls them (Mem-α's official code).

- `tool_schemas(memory)`: the three memorisation tools (new_memory_insert, memory_update,
  memory_delete) with the official descriptions, `memory_type` enums filtered to the enabled
  stores (a tool whose enum empties is dropped), as the official `to_schema` does.
- `function_call_block(functions)`: the Qwen-Agent (0.0.29) plaintext function-calling section the
  official code appends to the system message (`✿FUNCTION✿`/`✿ARGS✿` markers, parallel calls);
  tested against that library's output.
- `parse_calls(text)`: the calls in a generation, as the official regex captures them (the tool
  name may sit on the line after `✿FUNCTION✿:`). A `✿FUNCTION✿` block it cannot read (no
  `✿ARGS✿`, cut off by the token limit, a `✿` inside the arguments) is skipped silently, as
  officially; with `count_unreadable` it becomes a call that fails, so that every attempted call
  counts in the tool-call reward's denominator (our stricter choice, a config switch).
- `execute(memory, call)`: runs one call; every malformed call is a failed result, never an
  exception. As officially: a non-string `content`/`new_content` is stored (as its text),
  `memory_delete` strips every `_memory` from its type (`episodic_memory_memory` works), and
  `search_memory` is callable while memorising (it only reads).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memrepro.agents.structured_memory import (
    CORE,
    EPISODIC,
    SEMANTIC,
    MemoryOperationError,
    StructuredMemory,
)

FUNCTION, ARGS, RESULT, RETURN = "✿FUNCTION✿", "✿ARGS✿", "✿RESULT✿", "✿RETURN✿"

_TYPE = "memory_type"
_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "name": "new_memory_insert",
        "description": "Infer a new memory and append it to a memory store. Creates a new memory item with a unique ID. Note: Core memory cannot be inserted, only updated.",
        "parameters": [
            (
                _TYPE,
                "Type of memory to insert: 'semantic' (general knowledge) or 'episodic' (specific experiences). Core memory cannot be inserted.",
                True,
                (SEMANTIC, EPISODIC),
            ),
            (
                "content",
                "Content of the memory to insert. Creates a new memory item with a unique ID.",
                True,
                None,
            ),
        ],
    },
    {
        "name": "memory_update",
        "description": "Update an existing memory. For core memory, replaces the entire paragraph content. If core memory is empty, then directly write into the core memory. For semantic/episodic memories, updates the specific memory item by ID.",
        "parameters": [
            (
                _TYPE,
                "Type of memory to update: 'core' (simple paragraph), 'semantic' (general knowledge), or 'episodic' (specific experiences)",
                True,
                (CORE, SEMANTIC, EPISODIC),
            ),
            (
                "new_content",
                "New **combined** content for the memory. For core memory, this replaces the entire paragraph. For semantic/episodic, this replaces the content of the specified memory ID.",
                True,
                None,
            ),
            (
                "memory_id",
                "ID of the memory to update. Required for semantic/episodic memories, ignored for core memory.",
                False,
                None,
            ),
        ],
    },
    {
        "name": "memory_delete",
        "description": "Delete a memory. For core memory, clears the entire paragraph content. For semantic/episodic memories, deletes the specific memory item by ID.",
        "parameters": [
            (
                _TYPE,
                "Type of memory to delete: 'core' (simple paragraph), 'semantic' (general knowledge), or 'episodic' (specific experiences)",
                True,
                (CORE, SEMANTIC, EPISODIC),
            ),
            (
                "memory_id",
                "ID of the memory to delete. Required for semantic/episodic memories, ignored for core memory.",
                False,
                None,
            ),
        ],
    },
)
# The stores each tool's `memory_type` must name, with the suffix (insert and update assert it;
# delete takes bare names too); search_memory is not shown while memorising but still runs.
_SUFFIXED_TYPES = {
    "new_memory_insert": {f"{s}_memory" for s in (SEMANTIC, EPISODIC)},
    "memory_update": {f"{s}_memory" for s in (CORE, SEMANTIC, EPISODIC)},
}


def tool_schemas(memory: StructuredMemory) -> list[dict[str, Any]]:
    """The memorisation tools ({name, description, parameters}) for this memory's stores."""
    schemas = []
    for tool in _TOOLS:
        properties: dict[str, Any] = {}
        required = []
        for name, description, is_required, stores in tool["parameters"]:
            prop: dict[str, Any] = {"type": "string", "description": description}
            if stores is not None:
                prop["enum"] = [f"{s}_memory" for s in stores if s in memory.enabled]
                if not prop["enum"]:
                    break
            properties[name] = prop
            if is_required:
                required.append(name)
        else:
            parameters = {"type": "object", "properties": properties, "required": required}
            schemas.append(
                {**{k: tool[k] for k in ("name", "description")}, "parameters": parameters}
            )
    return schemas


def function_call_block(functions: Sequence[dict[str, Any]]) -> str:
    """The tools section appended to the system message (after a blank line), in Qwen-Agent's
    English parallel-call format."""
    tools = "\n\n".join(
        f"### {f['name']}\n\n{f['name']}: {f['description']} Parameters: "
        f"{json.dumps(f['parameters'], ensure_ascii=False)} Format the arguments as a JSON object."
        for f in functions
    )
    names = ",".join(f["name"] for f in functions)
    return (
        f"# Tools\n\n## You have access to the following tools:\n\n{tools}\n\n"
        "## Insert the following command in your reply when you need to call N tools in parallel:"
        f"\n\n{FUNCTION}: The name of tool 1, should be one of [{names}]\n"
        f"{ARGS}: The input of tool 1\n{FUNCTION}: The name of tool 2\n{ARGS}: The input of tool 2\n"
        f"...\n{FUNCTION}: The name of tool N\n{ARGS}: The input of tool N\n"
        f"{RESULT}: The result of tool 1\n{RESULT}: The result of tool 2\n...\n"
        f"{RESULT}: The result of tool N\n"
        f"{RETURN}: Reply based on tool results. Images need to be rendered as ![](url)"
    )


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # the raw argument text, cut after its last "}"
    malformed: str | None = None  # why the call could not be read, if it could not


@dataclass(frozen=True)
class ToolResult:
    ok: bool  # executed (a skipped duplicate insert executed too)
    message: str  # "[tool NAME executed successfully] → {...}" or "[tool NAME error] kind: msg"
    skipped: bool = False  # a duplicate insert: executed, nothing stored

    @property
    def succeeded(self) -> bool:
        """A success for the tool-call reward r2: executed and not skipped (official)."""
        return self.ok and not self.skipped


_CALL = re.compile(
    rf"{FUNCTION}:\s*([^\n]*?)\s*{ARGS}:[ \t]*([^✿]*?)\s*(?={RESULT}|{RETURN}|{FUNCTION}|\Z)",
    re.DOTALL,
)
_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
# calls one reply may run: a 2,048-token reply holds ~80 (a call is >= ~25 tokens); beyond, the
# rest is one failed call, so a runaway reply cannot mean unbounded work
MAX_CALLS_PER_REPLY = 256


def parse_calls(text: str, count_unreadable: bool = False) -> tuple[str, list[ToolCall]]:
    """(the text before the first call, the calls in order). Without calls: (the reply with
    any <think>…</think> removed, []). An unreadable block is skipped, or with
    `count_unreadable` returned as a malformed call. Calls beyond MAX_CALLS_PER_REPLY become
    one malformed call."""
    first = text.find(FUNCTION)
    if first < 0:
        return _THINK.sub("", text).strip(), []
    calls = []
    for marker in re.finditer(FUNCTION, text):
        if len(calls) == MAX_CALLS_PER_REPLY:
            rest = f"more than {MAX_CALLS_PER_REPLY} calls in one reply: the rest were not run"
            calls.append(ToolCall("", "", rest))
            break
        match = _CALL.match(text, marker.start())
        if match is None:
            if count_unreadable:
                line = text[marker.start() :].split("\n", 1)[0]
                calls.append(ToolCall("", "", f"unreadable call: {line[:200]!r}"))
            continue
        name, arguments = match.group(1).strip(), match.group(2)
        end = arguments.rfind("}")
        calls.append(ToolCall(name, arguments[: end + 1] if end >= 0 else arguments.strip()))
    return text[:first].strip(), calls


def execute(memory: StructuredMemory, call: ToolCall) -> ToolResult:
    """Run one call on `memory` (it changes only on success)."""
    name = call.name or "?"
    if call.malformed is not None:
        return _failed(name, "Invalid tool call", call.malformed)
    try:
        arguments = parse_arguments(call)
    except (json.JSONDecodeError, ValueError) as e:
        return _failed(name, "Invalid JSON arguments", str(e))
    if not isinstance(arguments, dict):
        return _failed(
            name, "Unexpected error", f"arguments must be a JSON object, got {arguments!r}"
        )
    try:
        result = _run(memory, call.name, arguments)
    except KeyError as e:
        return _failed(name, "Missing required argument", str(e))
    except MemoryOperationError as e:
        return _failed(name, "Invalid argument value", str(e))
    except (TypeError, AttributeError, AssertionError) as e:
        return _failed(name, "Unexpected error", str(e) or type(e).__name__)
    skipped = result.get("status") == "skipped"
    return ToolResult(True, f"[tool {name} executed successfully] → {result}", skipped)


def parse_arguments(call: ToolCall) -> Any:
    """A call's arguments, repaired by `json-repair` as the official executor does, then parsed
    (ValueError when even the repaired text is not JSON)."""
    return json.loads(_repair(call.arguments))


def _run(memory: StructuredMemory, name: str, args: dict[str, Any]) -> dict[str, Any]:
    if name in _SUFFIXED_TYPES and args[_TYPE] not in _SUFFIXED_TYPES[name]:
        raise AssertionError(f"memory_type must be one of {sorted(_SUFFIXED_TYPES[name])}")
    if name == "new_memory_insert":
        return memory.insert(args[_TYPE], _text(args["content"]))
    if name == "memory_update":
        return memory.update(args[_TYPE], _text(args["new_content"]), args.get("memory_id"))
    if name == "memory_delete":
        memory_type = args[_TYPE]
        if isinstance(memory_type, str):
            memory_type = memory_type.replace("_memory", "")
        return memory.delete(memory_type, args.get("memory_id"))
    if name == "search_memory":
        results = memory.search(args[_TYPE], _text(args["query"]))
        return {
            "status": "ok",
            "results": results,
            "search_method": args.get("search_method", "bm25"),
        }
    raise KeyError(f"unknown tool {name!r}")


def _text(value: Any) -> str:
    """Stored content: a non-string (42, a list) is stored officially as it came and rendered
    as its text; we store that text, which the token counter can then measure."""
    return value if isinstance(value, str) else str(value)


def _repair(arguments: str) -> str:
    """The arguments as JSON, repaired by `json-repair` as the official executor does."""
    from json_repair import repair_json

    return repair_json(arguments)


def _failed(name: str, kind: str, message: str) -> ToolResult:
    return ToolResult(False, f"[tool {name} error] {kind}: {message}")
