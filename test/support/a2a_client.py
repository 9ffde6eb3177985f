"""An A2A client made of the official Python SDK (a2a-sdk), for the tests of Agentplane's A2A server.

    python a2a_client.py          # one request a line on stdin, one answer a line on stdout, until EOF

A request is a JSON object naming an operation (`card`, `send`, `stream`, `get`, `list`, `cancel`) and its
arguments: the agent's A2A URL, the API key, and the operation's own. Its answer is one JSON object: what the
server returned, as ProtoJSON, or {"error": <the SDK's error class>, "message": ...} when the SDK raised.
One process serves a whole test file, so the SDK is imported once.
"""

import asyncio
import base64
import json
import sys
import uuid

import httpx
from google.protobuf.json_format import MessageToDict

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import new_text_message
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)


def as_json(message) -> dict:
    return MessageToDict(message, preserving_proto_field_name=False)


async def card_of(http: httpx.AsyncClient, url: str) -> AgentCard:
    return await A2ACardResolver(http, url).get_agent_card()


async def client_of(http: httpx.AsyncClient, request: dict, streaming: bool):
    # The factory first: it gives the HTTP client the A2A-Version header it speaks, the card's request included.
    factory = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming))
    card = await card_of(http, request['url'])
    version = request.get('version')
    if version:
        # Only the interface of the version asked for: the factory then speaks that version (0.3: the compat transport).
        kept = [i for i in card.supported_interfaces if i.protocol_version == version]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(kept)
    return factory.create(card)


def message_of(request: dict) -> Message:
    files = request.get('files')
    if not files:
        return new_text_message(request['text'], context_id=request.get('context_id'), role=Role.ROLE_USER)
    # A file travels as its bytes (`raw`), with its media type and name.
    parts = [Part(text=request['text'])] if request.get('text') else []
    parts += [Part(raw=base64.b64decode(f['base64']), media_type=f['media_type'], filename=f['filename']) for f in files]
    return Message(message_id=str(uuid.uuid4()), context_id=request.get('context_id') or '', role=Role.ROLE_USER, parts=parts)


def list_request(request: dict) -> ListTasksRequest:
    listed = ListTasksRequest(context_id=request.get('context_id', ''), page_token=request.get('page_token', ''))
    if 'status' in request:
        listed.status = TaskState.Value(request['status'])
    for field in ('page_size', 'history_length', 'include_artifacts'):
        if field in request:
            setattr(listed, field, request[field])
    return listed


def message_request(request: dict) -> SendMessageRequest:
    send = SendMessageRequest(message=message_of(request))
    if request.get('return_immediately'):
        send.configuration.return_immediately = True
    return send


async def operate(request: dict) -> dict:
    headers = {'Authorization': f"Bearer {request['key']}"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        op = request['op']
        if op == 'card':
            ClientFactory(ClientConfig(httpx_client=http))
            return as_json(await card_of(http, request['url']))
        client = await client_of(http, request, streaming=op == 'stream')
        if op in ('send', 'stream'):
            events = [as_json(event) async for event in client.send_message(message_request(request))]
            return {'events': events}
        if op == 'get':
            return as_json(await client.get_task(GetTaskRequest(id=request['task_id'])))
        if op == 'list':
            return as_json(await client.list_tasks(list_request(request)))
        if op == 'cancel':
            return as_json(await client.cancel_task(CancelTaskRequest(id=request['task_id'])))
        raise ValueError(f'unknown operation {op}')


def main() -> None:
    for line in sys.stdin:
        try:
            answer = asyncio.run(operate(json.loads(line)))
        except Exception as error:  # noqa: BLE001 - the test reads which error the SDK raised
            answer = {'error': type(error).__name__, 'message': str(error)}
        print(json.dumps(answer), flush=True)


if __name__ == '__main__':
    main()
