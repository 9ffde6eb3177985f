"""
Schemathesis hooks for the contract fuzz run (test/contract/fuzz.test.ts). Each one leaves out exactly one
thing, for the reason written beside it; everything else the run sends is checked in full.
"""
import json
import os
import re

import schemathesis

# The run authenticates with one admin key. It lists the project's keys and may revoke or change any it finds;
# revoking its own would turn every later request into a 401 and leave the rest of the API untested.
OWN_KEY_ID = os.environ["AGENTPLANE_FUZZ_KEY_ID"]


# Nor may it give its own key a rate limit (PATCH, or POST, its deprecated verb): past a few requests a minute,
# every later request would answer 429. The bootstrap key's limits are the deployment's alone, but this key
# is a tenant's admin key, which may lower its own.
@schemathesis.hook
def filter_case(context, case):
    changes_own_key = case.method.upper() in ("DELETE", "PATCH", "POST") and case.path == "/v1/api-keys/{id}"
    return not (changes_own_key and (case.path_parameters or {}).get("id") == OWN_KEY_ID)


# Ids that a create replayed for its Idempotency-Key returned.
replayed_ids = set()


@schemathesis.hook
def after_call(context, case, response):
    if "true" in response.headers.get("idempotent-replayed", []):
        replayed_ids.add(json.loads(response.content).get("id"))


def error_of(response):
    try:
        error = json.loads(response.content)["error"]
        return error if isinstance(error, dict) else {}
    except (ValueError, KeyError, TypeError):
        return {}


def error_code(response):
    return error_of(response).get("code")


# How the API words a clash between two of an agent's tools (tools/definitions.ts).
TOOL_CLASH = re.compile(r"is already used by tools\.\d+$|belong to the tools of the MCP server ")
# How the network guard words a literal host that is not public, for an IPv6 one (tools/network-guard.ts).
IPV6_NOT_PUBLIC = re.compile(r"(^|\s)[0-9A-Fa-f.]*:[0-9A-Fa-f:.]* is not a public address")
# How the API words a host whose `xn--` label does not decode (tools/network-guard.ts).
NOT_PUNYCODE = re.compile(r" is not a host name: its label \S+ is not valid punycode")
# Where free-form JSON is, in the name of a parameter: a tool's schemas, an approver's edited arguments.
TOOL_PARAMETERS = re.compile(r"tools\.\d+\.(parameters|approval\.arguments|policy\.deny_when)\.|arguments\.|scorers\.\d+\.schema\.|items\.\d+\.|eval\.")
# Where a dataset scorer's JSON Schema is, in the name of a parameter.
SCORER_SCHEMA = re.compile(r"scorers\.\d+\.schema")


# How schemathesis names the query parameter a request it expected refused got wrong.
INVALID_QUERY_PARAMETER = re.compile(r"Invalid component: parameter `([^`]+)` in query")


def sent_null_as_text(query, name):
    """Whether every value the request sent for parameter `name` (or its `name[key]` members) is the text null."""
    values = [value for key, value in query.items() if key == name or key.startswith(name + "[")]
    return bool(values) and all(value in ("null", None) for value in values)


@schemathesis.hook
def filter_failure(context, failure, case, response):
    query = case.query or {}
    # ST202 (schema-valid request rejected), for rules the document states in words because OpenAPI cannot
    # state them in a schema (docs/api.md, Lists; ModelName):
    if failure.code == "ST202" and response.status_code == 400:
        # - `after` and `before` together answer 400: a schema cannot relate two query parameters (an empty one
        #   is no cursor, so only two given cursors clash);
        if query.get("after") and query.get("before"):
            return False
        # - an `after` or `before` id that names no object of the list answers 400 invalid_cursor: a schema
        #   says what an id looks like, not which ids exist.
        if error_code(response) == "invalid_cursor":
            return False
        # - a time range's end must come after its start, and a reprice covers at most 366 days (400
        #   invalid_range, docs/api.md, Costs): a schema cannot relate two parameters.
        if error_code(response) == "invalid_range":
            return False
        # - a model name the catalogue does not hold answers 400 model_not_found (ModelName): the catalogue is
        #   configuration (AGENTPLANE_MODELS) and what OPENAI_BASE_URL's server lists, which is read again while
        #   the API runs, so an enum in the served document would go stale under a client that kept it.
        if error_code(response) == "model_not_found":
            return False
        # - a network's members (and a supervisor's `router.agent_id`) must be live agents of the caller's project
        #   (400 unknown_member): which ids exist is the database's to say, as for invalid_cursor.
        if error_code(response) == "unknown_member":
            return False
        # - `previous_run_id` must name a run of the agent being run (400 invalid_parameter, CreateRunRequest): which
        #   agent a run is of is the database's to say, as for unknown_member.
        if error_of(response).get("param") == "previous_run_id" and " continues a run of this agent" in error_of(response).get("message", ""):
            return False
        # - a network's `worker_pool` must be a pool the operator runs for the caller's project (400
        #   unknown_worker_pool, WorkerPool): configuration (AGENTPLANE_WORKER_POOLS), as for model_not_found.
        if error_code(response) == "unknown_worker_pool":
            return False
        # - a schedule's `cron` must name times (each field within its range, five fields) and its `timezone` must be in
        #   the tz database (400 invalid_cron, invalid_timezone; CreateScheduleRequest): the ranges of each field and
        #   the tz database are the scheduler's to say, as the catalogue is for model_not_found.
        if error_code(response) in ("invalid_cron", "invalid_timezone"):
            return False
        # - an agent's tools may not clash: names and server labels unique, no HTTP tool name under an MCP
        #   server's `<label>__` (AgentFields.tools). The document rules out two tools alike (uniqueItems), but no
        #   schema can compare one field of an array's items.
        if error_code(response) == "invalid_tool" and TOOL_CLASH.search(error_of(response).get("message", "")):
            return False
        # - a tool's `parameters` must compile as a JSON Schema (HttpTool.parameters): which objects are schemas
        #   is the JSON Schema meta-schema's to say, and the document does not embed it.
        if error_code(response) == "invalid_tool" and "is not a usable JSON Schema" in error_of(response).get("message", ""):
            return False
        # - no string in a request may hold NUL or half a surrogate pair (the document's description): a tool's `parameters` (and its
        #   approval's and policy's schemas, an approver's edited `arguments`, a dataset scorer's schema, an item's
        #   `expected`, an import's items and eval) are free-form JSON, with no schema
        #   of their own for the strings inside them. (A recursive one would state it, but openapi-typescript cannot
        #   type a recursive union.)
        if error_code(response) == "invalid_parameter" and TOOL_PARAMETERS.match(error_of(response).get("param") or ""):
            if "NUL character" in error_of(response).get("message", "") or "surrogate pair" in error_of(response).get("message", ""):
                return False
        # - where the deployment refuses private targets (not the one the suite runs), a literal IPv6 host that is
        #   not public answers 400 invalid_url (webhooks) or invalid_tool (tools). The served document rules out
        #   `localhost` names and non-public IPv4 literals by pattern; IPv6's many spellings of its special ranges
        #   are stated in words only (ToolUrl, WebhookUrl).
        if error_code(response) in ("invalid_url", "invalid_tool") and IPV6_NOT_PUBLIC.search(error_of(response).get("message", "")):
            return False
        # - a host's `xn--` label must decode as punycode (400 invalid_url or invalid_tool, ToolUrl's description):
        #   no pattern can decode it, so the URL pattern admits any such label.
        if error_code(response) in ("invalid_url", "invalid_tool") and NOT_PUNYCODE.search(error_of(response).get("message", "")):
            return False
        # - a run holding the bootstrap key (not the one the suite runs) may not revoke it or set its rate limits
        #   (400 bootstrap_key, docs/api.md, Keys): its id is as random as any key's, so no pattern can single it out.
        if error_code(response) == "bootstrap_key":
            return False
        # - no object key in a JSON body may be `__proto__`, at any depth (400 invalid_json naming it, docs/api.md,
        #   Errors): the free-form objects (tool schemas, metadata of runs' inputs) have no schema of their own for
        #   the keys inside them, as for NUL above.
        if error_code(response) == "invalid_json" and "__proto__" in error_of(response).get("message", ""):
            return False
        # - no JSON body may nest objects and arrays deeper than 128 levels (400 invalid_json, docs/api.md, Errors):
        #   the free-form values have no schema of their own to bound their depth, as for NUL above.
        if error_code(response) == "invalid_json" and "deeper than 128 levels" in error_of(response).get("message", ""):
            return False
        # - a dataset names each scorer once (400 duplicate_scorer, ScorerSpec): no schema can compare one field of
        #   an array's items; and a `json_schema` scorer's `schema` must compile (400 invalid_scorer naming it), as a
        #   tool's `parameters` must.
        if error_code(response) == "duplicate_scorer":
            return False
        if error_code(response) == "invalid_scorer" and SCORER_SCHEMA.match(error_of(response).get("param") or ""):
            return False
        # - a dataset item is `input` (with `file_ids`) or `from_run_id`, and its free-form `expected` is at most
        #   65,536 bytes as JSON (400 invalid_item, expected_too_large, NewDatasetItem): stated in words, so that the
        #   refusal says which field to drop rather than which branch of a oneOf failed.
        if error_code(response) in ("invalid_item", "expected_too_large"):
            return False
        # - an import's items and criteria are another service's free-form export, read field by field (400
        #   invalid_import naming the item: not JSONL, or without the field the input or expected answer comes from).
        if error_code(response) == "invalid_import":
            return False
        # - a quality backfill's `judge` needs a judge model (400 judge_not_configured, docs/api.md, Quality):
        #   configuration, as for model_not_found.
        if error_code(response) == "judge_not_configured":
            return False
    # ST201 (schema-violating request accepted) answered 413 body_too_large: a JSON body over 1 MiB is refused
    # before it is parsed (docs/api.md, Errors), so an invalid body that is also too large is refused for its
    # size. 413 is a refusal; nothing was accepted.
    if failure.code == "ST201" and response.status_code == 413 and error_code(response) == "body_too_large":
        return False
    # ST201 (schema-violating request accepted) for a null drawn as a query value: a query string holds text only,
    # so the null arrives as the text `null`, which the parameter's string schema allows (`metadata[k]=null`).
    if failure.code == "ST201" and response.status_code < 300:
        invalid = INVALID_QUERY_PARAMETER.search(getattr(failure, "message", "") or "")
        if invalid and sent_null_as_text(query, invalid.group(1)):
            return False
    body = case.body if isinstance(case.body, dict) else {}
    if case.path == "/v1/files" and case.method.upper() == "POST":
        # ST202 for an upload answered 415: the type is decided from the content (docs/api.md, Files), which
        # a schema cannot state. The run draws the file as text, and text holding a NUL byte is not text.
        if failure.code == "ST202" and response.status_code == 415 and "\x00" in str(body.get("file", "")):
            return False
        # ST201 (schema-violating request accepted) for a file the run drew as a number or a boolean: a
        # multipart part is bytes, so it arrives as the text of that value, which is a valid text file.
        if failure.code == "ST201" and not isinstance(body.get("file"), (str, bytes)):
            return False
    # ST302 (created resource not found): a create replayed for its Idempotency-Key answers as it first did,
    # even when the resource has been deleted since (docs/api.md, Idempotency). The run reuses keys across
    # scenarios, and then takes the deleted resource for one just created and missing.
    if failure.code == "ST302" and (case.path_parameters or {}).get("id") in replayed_ids:
        return False
    return True
