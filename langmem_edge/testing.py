"""Deterministic fakes for tests: yours and ours.

- :class:`FakeEmbeddings`: hashed bag-of-words vectors. Same text, same vector, in every
  process; texts that share words are closer than texts that do not, so similarity search
  behaves sensibly without a model. No model, no network.
- :class:`ScriptedChatModel`: a chat model that answers from a script (a list of replies, or
  a function of the prompt), for testing code that calls a ``BaseChatModel``.
- :func:`chroma_server`: a throwaway ``chroma run`` on 127.0.0.1 for server-mode tests;
  :func:`chroma_command`: the command line that runs chromadb's CLI with this interpreter.
- :func:`unsaid_specifics`: the names and numbers of a stored memory that nothing said holds,
  the yardstick of the real-model test and benchmark (``benchmarks/real_model.py``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

__all__ = ["FakeEmbeddings", "ScriptedChatModel", "chroma_command", "chroma_server",
           "unsaid_specifics"]

_WORD = re.compile(r"\w+", re.UNICODE)


class FakeEmbeddings(Embeddings):
    """Hashed bag-of-words embeddings, L2-normalised.

    Args:
        dims: Vector size. Default 384 (the default model's).
    """

    def __init__(self, dims: int = 384) -> None:
        self.dims = dims
        self.calls = 0
        self.texts_embedded = 0

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * self.dims
        words = _WORD.findall(text.lower()) or [text]
        for word in words:  # each word lands on 4 signed slots: distinct words rarely collide
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=20).digest()
            for j in range(4):
                chunk = digest[5 * j : 5 * j + 5]
                slot = int.from_bytes(chunk[:4], "little") % self.dims
                vec[slot] += 1.0 if chunk[4] & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vec))
        if norm == 0:
            vec[0] = 1.0
            return vec
        return [x / norm for x in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.texts_embedded += len(texts)
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class ScriptedChatModel(BaseChatModel):
    """A chat model that replies from a script.

    Args:
        responses: Replies returned in order; the last one repeats (unless it calls tools:
            see below). A reply is a string or an ``AIMessage`` (a plain reply, also when
            tools are bound), an ``AIMessage(tool_calls=[...])`` (a scripted tool call), a
            dict or pydantic model (the answer of ``with_structured_output``), or an
            exception to raise.
        respond: Alternatively, a function from the prompt messages to a reply.

    In a tool-calling agent (``create_agent(model, tools)``), script the tool calls as
    ``AIMessage(content="", tool_calls=[{"name": ..., "args": {...}, "id": ...}])`` and end
    with the final answer as a string. A script whose last reply calls tools raises
    ``RuntimeError`` once it is exhausted, instead of calling the tools again and again.
    """

    responses: list[Any] = []
    respond: Callable[[Sequence[BaseMessage]], Any] | None = None
    calls: list[list[BaseMessage]] = []

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        """Record the tools (and ``tool_choice``). Only a binding that forces a tool
        (``with_structured_output`` binds its schema with ``tool_choice="any"``) turns a
        scripted dict or pydantic reply into a call to the first tool; strings and
        ``AIMessage`` replies stay as they are."""
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _script(self) -> Any:
        n = len(self.calls)
        if n <= len(self.responses):
            return self.responses[n - 1]
        last = self.responses[-1]
        if isinstance(last, AIMessage) and last.tool_calls:
            raise RuntimeError(
                f"ScriptedChatModel: call {n} but the script has {len(self.responses)} "
                "replies and the last one calls tools; repeating it would loop the agent. "
                "End the script with the final answer (a string).")
        return last

    def _next(self, messages: list[BaseMessage], tools: list[dict[str, Any]] | None = None,
              forced: bool = False) -> AIMessage:
        self.calls.append(list(messages))
        if self.respond is not None:
            reply = self.respond(messages)
        elif self.responses:
            reply = self._script()
        else:
            reply = ""
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, AIMessage):
            return reply
        if isinstance(reply, (dict, BaseModel)):
            args = reply.model_dump() if isinstance(reply, BaseModel) else reply
            if tools and forced:
                call = {"name": tools[0]["function"]["name"], "args": args,
                        "id": f"call_{len(self.calls)}"}
                return AIMessage(content="", tool_calls=[call])
            return AIMessage(content=json.dumps(args, default=str))
        return AIMessage(content=str(reply))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        forced = kwargs.get("tool_choice") not in (None, "auto", "none")
        message = self._next(messages, kwargs.get("tools"), forced)
        return ChatResult(generations=[ChatGeneration(message=message)])


def chroma_command() -> list[str]:
    """The command that runs chromadb's ``chroma`` CLI with this interpreter.

    chromadb declares the CLI as the console script ``chroma = chromadb.cli.cli:app`` and its
    module has no ``__main__`` block: ``python -m chromadb.cli.cli`` imports it and exits 0
    without a word. So the entry point is read from chromadb's installed metadata and called
    through ``sys.executable -c``: no dependence on PATH, on where the installer put scripts,
    or on a ``chroma`` from another environment shadowing this one.
    """
    from importlib.metadata import PackageNotFoundError, distribution

    target = "chromadb.cli.cli:app"
    try:
        for ep in distribution("chromadb").entry_points:
            if ep.group == "console_scripts" and ep.name == "chroma":
                target = ep.value
                break
    except PackageNotFoundError:  # pragma: no cover - chromadb is a dependency
        pass
    module, _, attr = target.partition(":")
    code = (
        "import importlib, sys; "
        f"app = importlib.import_module({module!r}).{attr}; "
        "sys.argv[0] = 'chroma'; sys.exit(app())"
    )
    return [sys.executable, "-c", code]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def chroma_server(*, port: int | None = None, startup_timeout: float = 60.0) -> Iterator[str]:
    """Start ``chroma run`` on 127.0.0.1 and a temporary folder; yield its URL; stop it by its
    PID (and delete the folder) on exit.

    The server runs under this interpreter (:func:`chroma_command`), so it starts whether or
    not the environment's ``bin`` folder is on PATH.

    Args:
        port: The port to listen on. Default: a free one.
        startup_timeout: Seconds to wait for the first heartbeat. Default 60.

    Raises:
        RuntimeError: the server exited before answering (the message has its exit code and
            output), or did not answer within ``startup_timeout``.

    Example:
        ```python
        with chroma_server() as url:
            store = ChromaStore.from_url(url, index=...)
        ```
    """
    import httpx

    port = _free_port() if port is None else port
    folder = tempfile.mkdtemp(prefix="langmem-edge-chroma-")
    log_path = Path(folder) / "server.log"
    args = ["run", "--path", folder, "--host", "127.0.0.1", "--port", str(port)]
    url = f"http://127.0.0.1:{port}"
    proc: subprocess.Popen[bytes] | None = None
    try:
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [*chroma_command(), *args], stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + startup_timeout
        while True:
            code = proc.poll()
            if code is not None:
                output = log_path.read_text(errors="replace")[-4000:].strip()
                raise RuntimeError(
                    f"chroma run ({' '.join(args)}) exited with code {code} before answering "
                    f"on {url}; its output: {output or '(nothing)'}"
                )
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                output = log_path.read_text(errors="replace")[-4000:].strip()
                raise RuntimeError(
                    f"chroma run did not answer on {url} within {startup_timeout} s; "
                    f"its output: {output or '(nothing)'}"
                )
            time.sleep(0.2)
        yield url
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


_PLAIN_CAPITALISED = frozenset(
    "a an and at has have he her his i in is it likes lives my on she the their they this "
    "user user's users was works".split())
_SPECIFIC = re.compile(r"[A-Z][\w'’-]*|\d+")


def unsaid_specifics(memory: str, said: Sequence[str]) -> list[str]:
    """The names and numbers of ``memory`` that no text of ``said`` holds, in order.

    Stricter than extraction's grounding check
    (:func:`langmem_edge.memory.episodic.grounding.grounding_problem`), so that it can judge
    it: *every* capitalised word counts as a name, a sentence's first word included, unless
    it is said (case-insensitively, possessive ``'s`` dropped) or one of a few words a memory
    starts with ("The", "User", "He", ...); a number counts unless a said text states it as
    digits, a number word or a month. It may flag a plain word the model capitalised: read
    what it returns before calling it an invention.
    """
    from langmem_edge.memory.episodic.grounding import number_values

    text = " ".join(said)
    words = {w.lower().removesuffix("'s").removesuffix("’s") for w in _WORD.findall(text)}
    numbers = number_values(text)
    found: list[str] = []
    for token in _SPECIFIC.findall(memory):
        if token.isdigit():
            if int(token) not in numbers:
                found.append(token)
            continue
        word = token.lower().rstrip("'’-").removesuffix("'s").removesuffix("’s")
        if word not in words and word not in _PLAIN_CAPITALISED:
            found.append(token)
    return found
