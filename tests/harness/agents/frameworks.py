"""Agents built on other frameworks, each as a wire campaign takes it: ``agent(prompt, *, base_url,
api_key[, http_client])`` returning the final text (the ``agents`` extra installs the frameworks).

What each client takes as ``base_url`` (the emulator's root is ``base_url``): OpenAI clients and
everything over them ``BASE/v1``; Anthropic clients and google-genai ``BASE``; boto3
``endpoint_url=BASE``; LiteLLM's ``api_base`` as the SDK it wraps (Gemini: ``BASE/v1beta``;
Bedrock: ``aws_bedrock_runtime_endpoint=BASE``). A framework that accepts an ``httpx2`` client is
given one in process (pydantic-ai's ``GoogleProvider`` too); LangChain's ``ChatAnthropic``,
``ChatGoogleGenerativeAI`` and ``ChatBedrockConverse`` and everything over boto3 build their own,
so those agents are served on loopback.

Every agent sets a read timeout of ``READ_TIMEOUT`` seconds the way its framework documents one
(pydantic-ai's ``ModelSettings.timeout``, LangChain's ``timeout``, LiteLLM's ``timeout``, the
OpenAI client's ``timeout``, botocore's ``Config(read_timeout=...)``): the SDKs' defaults (600 s
for openai and anthropic, 60 s for botocore) outlast the campaign's 20 s time bound, so a stream
that stops sending without closing would hold the run past it (W3). Where the agent is given an
``http_client``, the timeout travels on each request (``request.extensions["timeout"]``), set by
the SDK from its own option: the client's own timeout is httpx's default, which the SDKs replace.

Deviations are declared on the agent (``wire_deviations``) only where the framework documents the
behaviour; ``docs/wire-campaigns.md`` has the findings with our judgement of each.
"""

from __future__ import annotations

import json
import os
from typing import Any

from harness.agents import Deviation

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm fetches a price list at import otherwise
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")  # and the Agents SDK uploads traces

# Imported here, not in the agents: a run's time bound (W3) should not pay for a framework's import.
import boto3
import litellm
import openai
from agents import Agent as OpenAIAgent
from agents import OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool
from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_aws import ChatBedrockConverse
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_openai import ChatOpenAI
from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.bedrock import BedrockConverseModel
from pydantic_ai.models.google import GoogleModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.bedrock import BedrockProvider
from pydantic_ai.providers.google import GoogleProvider
from pydantic_ai.providers.openai import OpenAIProvider

litellm.suppress_debug_info = True

MODEL = "gpt-test"
GEMINI = "gemini-2.5-flash"
BEDROCK = "us.amazon.nova-micro-v1:0"
READ_TIMEOUT = 2.0
"""Seconds a client waits for the next bytes: a stall ends each attempt, and with the retries of
each framework a run whose every reply stalls ends inside the campaign's 20 s time bound (2 to 12 s
measured on a loaded machine; LiteLLM's OpenAI route, whose retries wrap the SDK's, the longest)."""
AWS = {"region_name": "us-east-1", "aws_access_key_id": "emulated", "aws_secret_access_key": "emulated"}


def _boto3_client(base_url: str) -> Any:
    """A Bedrock Runtime client against the emulator, with one retry (botocore's legacy mode counts
    ``max_attempts`` as retries): the default four would make each error status cost seconds. Its
    read timeout is botocore's ``Config`` option (60 s by default), as a user building the client sets
    it: LangChain's ``ChatBedrockConverse(timeout=...)`` applies only to a client it builds itself."""
    from botocore.config import Config

    config = Config(retries={"max_attempts": 1}, read_timeout=READ_TIMEOUT, connect_timeout=READ_TIMEOUT)
    return boto3.client("bedrock-runtime", endpoint_url=base_url, config=config, **AWS)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def lookup(word: str) -> str:
    """Look a word up."""
    return f"{word}: a word"


# -- pydantic-ai --------------------------------------------------------------------------------

SETTINGS: Any = {"timeout": READ_TIMEOUT}
"""pydantic-ai's per-request ``timeout`` (``ModelSettings``), which it hands to the provider's SDK;
Bedrock is not among the models it supports, so that agent's client carries the timeout."""


async def pydantic_ai_chat(prompt: str, *, base_url: str, api_key: str, http_client: Any) -> str:
    provider = OpenAIProvider(base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client)
    agent = Agent(OpenAIChatModel(MODEL, provider=provider), tools=[add, lookup], model_settings=SETTINGS)
    result = await agent.run(prompt)
    return str(result.output)


async def pydantic_ai_chat_streamed(prompt: str, *, base_url: str, api_key: str, http_client: Any) -> str:
    """The same agent, streamed: an ``event_stream_handler`` makes pydantic-ai ask for a stream."""
    provider = OpenAIProvider(base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client)
    agent = Agent(OpenAIChatModel(MODEL, provider=provider), tools=[add, lookup], model_settings=SETTINGS)

    async def ignore(context: Any, events: Any) -> None:
        async for _ in events:
            pass

    result = await agent.run(prompt, event_stream_handler=ignore)
    return str(result.output)


async def pydantic_ai_anthropic(prompt: str, *, base_url: str, api_key: str, http_client: Any) -> str:
    provider = AnthropicProvider(base_url=base_url, api_key=api_key, http_client=http_client)
    agent = Agent(AnthropicModel("claude-test", provider=provider), tools=[add, lookup], model_settings=SETTINGS)
    result = await agent.run(prompt)
    return str(result.output)


async def pydantic_ai_gemini(prompt: str, *, base_url: str, api_key: str, http_client: Any) -> str:
    provider = GoogleProvider(api_key=api_key, base_url=base_url, http_client=http_client)
    agent = Agent(GoogleModel(GEMINI, provider=provider), tools=[add, lookup], model_settings=SETTINGS)
    result = await agent.run(prompt)
    return str(result.output)


async def pydantic_ai_bedrock(prompt: str, *, base_url: str, api_key: str) -> str:
    provider = BedrockProvider(bedrock_client=_boto3_client(base_url))
    agent = Agent(BedrockConverseModel(BEDROCK, provider=provider), tools=[add, lookup])  # the client's read_timeout
    result = await agent.run(prompt)
    return str(result.output)


# -- OpenAI Agents SDK ---------------------------------------------------------------------------


async def _openai_agents(prompt: str, base_url: str, api_key: str, http_client: Any, responses: bool) -> str:
    client = openai.AsyncOpenAI(
        base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, timeout=READ_TIMEOUT
    )
    model: Any = (
        OpenAIResponsesModel(MODEL, openai_client=client)
        if responses
        else OpenAIChatCompletionsModel(MODEL, openai_client=client)
    )
    tools = [function_tool(add), function_tool(lookup)]
    agent = OpenAIAgent(name="assistant", instructions="Use the tools.", model=model, tools=tools)
    result = await Runner.run(agent, prompt)
    return str(result.final_output)


async def openai_agents_chat(prompt: str, *, base_url: str, api_key: str, http_client: Any) -> str:
    return await _openai_agents(prompt, base_url, api_key, http_client, responses=False)


async def openai_agents_responses(prompt: str, *, base_url: str, api_key: str, http_client: Any) -> str:
    return await _openai_agents(prompt, base_url, api_key, http_client, responses=True)


_KEEPS_ONE_CALL_PER_ID = Deviation(
    "W2",
    "the SDK keeps one call per id: of two calls sharing an id (invalid model output) it sends only the "
    "first back in the history, with its one result",
    kinds=("duplicate ids",),
)
openai_agents_chat.wire_deviations = [_KEEPS_ONE_CALL_PER_ID]  # type: ignore[attr-defined]
openai_agents_responses.wire_deviations = [_KEEPS_ONE_CALL_PER_ID]  # type: ignore[attr-defined]


# -- LangChain -----------------------------------------------------------------------------------


def _langchain_text(result: dict[str, Any]) -> str:
    """The last message's text; on a Gemini prompt the provider blocked, an error saying so: the
    model (langchain-google-genai) answers it with an empty message and keeps the reason only in
    ``response_metadata["prompt_feedback"]`` (its choice, logged as a warning), so an agent that
    reads only the text returns ``""`` and hides the block (W4, the refusal rule)."""
    last = result["messages"][-1]
    blocked = (getattr(last, "response_metadata", None) or {}).get("prompt_feedback", {}).get("block_reason")
    if not last.content and blocked:
        raise RuntimeError(f"the provider blocked the prompt ({blocked})")
    content = last.content
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)


async def langchain_chat(prompt: str, *, base_url: str, api_key: str, http_client: Any) -> str:
    model = ChatOpenAI(
        model=MODEL, base_url=f"{base_url}/v1", api_key=api_key, http_async_client=http_client, timeout=READ_TIMEOUT
    )
    agent = create_agent(model, tools=[add, lookup])
    return _langchain_text(await agent.ainvoke({"messages": [("user", prompt)]}))


async def langchain_chat_streamed(prompt: str, *, base_url: str, api_key: str, http_client: Any) -> str:
    model = ChatOpenAI(
        model=MODEL,
        base_url=f"{base_url}/v1",
        api_key=api_key,
        http_async_client=http_client,
        streaming=True,
        timeout=READ_TIMEOUT,
    )
    agent = create_agent(model, tools=[add, lookup])
    return _langchain_text(await agent.ainvoke({"messages": [("user", prompt)]}))


async def langchain_anthropic(prompt: str, *, base_url: str, api_key: str) -> str:
    model = ChatAnthropic(model="claude-test", base_url=base_url, api_key=api_key, timeout=READ_TIMEOUT)
    agent = create_agent(model, tools=[add, lookup])
    return _langchain_text(await agent.ainvoke({"messages": [("user", prompt)]}))


async def langchain_gemini(prompt: str, *, base_url: str, api_key: str, max_retries: int = 3) -> str:
    """Three attempts: the default six, with google-genai's back-off from 1 s doubling, take about
    30 s to give up on a service that keeps failing, past the campaign's 20 s bound (W3)."""
    model = ChatGoogleGenerativeAI(
        model=GEMINI, google_api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=READ_TIMEOUT
    )
    agent = create_agent(model, tools=[add, lookup])
    return _langchain_text(await agent.ainvoke({"messages": [("user", prompt)]}))


async def langchain_gemini_default_retries(prompt: str, *, base_url: str, api_key: str) -> str:
    """The same agent with LangChain's default ``max_retries`` (6): the W3 finding."""
    return await langchain_gemini(prompt, base_url=base_url, api_key=api_key, max_retries=6)


async def langchain_bedrock(prompt: str, *, base_url: str, api_key: str) -> str:
    # the credentials too, or it looks for some (the instance metadata service) though given a client
    model = ChatBedrockConverse(model=BEDROCK, client=_boto3_client(base_url), **AWS)
    agent = create_agent(model, tools=[add, lookup])
    return _langchain_text(await agent.ainvoke({"messages": [("user", prompt)]}))


# -- LiteLLM (a client, not a framework: the loop is ours, as a LiteLLM user writes it) -----------

_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
        },
    },
]


def _run_tool(name: str, text: str) -> str:
    try:
        args = json.loads(text or "{}")
        return str({"add": add, "lookup": lookup}[name](**args))
    except Exception as exc:
        return f"error: {type(exc).__name__}: {exc}"


async def _litellm(prompt: str, model: str, api_base: str | None, api_key: str, **options: Any) -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(20):
        response = await litellm.acompletion(
            model=model,
            api_base=api_base,
            api_key=api_key,
            messages=messages,
            tools=_TOOLS,
            num_retries=2,
            timeout=READ_TIMEOUT,
            **options,
        )
        message = response.choices[0].message
        calls = message.tool_calls or []
        if not calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in calls:
            result = _run_tool(call.function.name, call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise RuntimeError("no answer after 20 rounds")


async def litellm_chat(prompt: str, *, base_url: str, api_key: str) -> str:
    return await _litellm(prompt, f"openai/{MODEL}", f"{base_url}/v1", api_key)


async def litellm_anthropic(prompt: str, *, base_url: str, api_key: str) -> str:
    return await _litellm(prompt, "anthropic/claude-test", base_url, api_key)


async def litellm_gemini(prompt: str, *, base_url: str, api_key: str) -> str:
    return await _litellm(prompt, f"gemini/{GEMINI}", f"{base_url}/v1beta", api_key)


async def litellm_bedrock(prompt: str, *, base_url: str, api_key: str) -> str:
    return await _litellm(
        prompt,
        f"bedrock/converse/{BEDROCK}",
        None,
        api_key,
        aws_bedrock_runtime_endpoint=base_url,
        aws_region_name=AWS["region_name"],
        aws_access_key_id=AWS["aws_access_key_id"],
        aws_secret_access_key=AWS["aws_secret_access_key"],
    )


AGENTS = {
    "pydantic-ai, OpenAI chat": pydantic_ai_chat,
    "pydantic-ai, OpenAI chat (streamed)": pydantic_ai_chat_streamed,
    "pydantic-ai, Anthropic": pydantic_ai_anthropic,
    "pydantic-ai, Gemini": pydantic_ai_gemini,
    "pydantic-ai, Bedrock": pydantic_ai_bedrock,
    "OpenAI Agents, chat": openai_agents_chat,
    "OpenAI Agents, Responses": openai_agents_responses,
    "LangChain, OpenAI chat": langchain_chat,
    "LangChain, OpenAI chat (streamed)": langchain_chat_streamed,
    "LangChain, Anthropic": langchain_anthropic,
    "LangChain, Gemini": langchain_gemini,
    "LangChain, Bedrock": langchain_bedrock,
    "LiteLLM, OpenAI chat": litellm_chat,
    "LiteLLM, Anthropic": litellm_anthropic,
    "LiteLLM, Gemini": litellm_gemini,
    "LiteLLM, Bedrock": litellm_bedrock,
}
