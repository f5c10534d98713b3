"""A chain of providers: retry transient failures in place, fail over on everything else.

- `rate_limit` and `network`: up to MAX_ATTEMPTS calls per provider, waiting
  min(500·2^a + 250·a, 8000) ms after failed attempt a; a Retry-After is a floor on that wait,
  and a Retry-After above MAX_RETRY_AFTER_S moves on to the next provider instead of waiting.
- a server fault (HTTP 5xx): SERVER_FAULT_ATTEMPTS calls, the same backoff between them (a
  restart or a blip passes; a server that keeps failing is not hammered), then the next provider.
- any other kind (`auth`, `bad_request`, `overflow`, `unknown`): next provider at once.
- `response_too_large` (an answer that passed the response cap): the chain stops there. That
  answer already cost a megabyte of output; asking again, here or elsewhere, may cost as much.
- every provider failed: the last ProviderError is raised, its message listing each failure.

A failed attempt may already have streamed text through `on_text`; the next attempt streams
its answer from the start. Callers that display streamed text pass `on_retry`: it gets a
RetryNotice (with `discarded_chars`) before every retry and failover, so they can drop that text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from lich_core.providers.base import (
    NO_CALL_OPTIONS,
    CallOptions,
    Model,
    ProviderError,
    RetryCallback,
    RetryNotice,
    TextCallback,
)
from lich_core.providers.http import run_cancellable
from lich_core.vocabulary import Message, ModelResponse, ToolDefinition

MAX_ATTEMPTS = 3
BACKOFF_BASE_MS = 500
BACKOFF_STEP_MS = 250
BACKOFF_CAP_MS = 8000
MAX_RETRY_AFTER_S = 30.0
RETRIED_KINDS = ("rate_limit", "network")
SERVER_FAULT_ATTEMPTS = 2  # a 5xx is retried once
# Kinds that end the whole call at once: neither retried nor failed over.
FINAL_KINDS = ("response_too_large",)

Sleep = Callable[[float], Awaitable[None]]


def backoff_ms(attempt: int) -> int:
    """Wait after failed attempt `attempt` (0-based)."""
    return min(BACKOFF_BASE_MS * 2**attempt + BACKOFF_STEP_MS * attempt, BACKOFF_CAP_MS)


def retry_delay_s(error: ProviderError, attempt: int) -> float | None:
    """Seconds to wait before retrying, or None to fail over."""
    if attempt + 1 >= _attempts(error):
        return None
    delay_s = backoff_ms(attempt) / 1000
    if error.retry_after_s is not None:
        if error.retry_after_s > MAX_RETRY_AFTER_S:
            return None
        delay_s = max(delay_s, error.retry_after_s)
    return delay_s


def _attempts(error: ProviderError) -> int:
    if error.kind in RETRIED_KINDS:
        return MAX_ATTEMPTS
    if error.status is not None and 500 <= error.status <= 599:
        return SERVER_FAULT_ATTEMPTS
    return 1


class ProviderChain:
    """Implements Model over an ordered list of models (each usually one provider)."""

    def __init__(self, models: Sequence[Model], *, sleep: Sleep | None = None) -> None:
        if not models:
            raise ValueError("ProviderChain needs at least one model")
        self.models = list(models)
        self.name = (
            self.models[0].name
            if len(self.models) == 1
            else " > ".join(m.name for m in self.models)
        )
        self._sleep: Sleep = sleep or asyncio.sleep
        # (provider name, attempt, error) for every failed call of the last complete(): for status displays and tests.
        self.last_failures: list[tuple[str, int, ProviderError]] = []

    # The chain calls on_sent for a model that cannot, before calling it (see complete).
    reports_sent = True

    @property
    def stops_on_cancel(self) -> bool:
        """Every model stops on the token, and the chain itself checks it between attempts and
        sleeps through it cancellably: the loop can await the chain without its own race."""
        return all(model.stops_on_cancel for model in self.models)

    def describe(self) -> str:
        parts = [getattr(m, "describe", lambda m=m: m.name)() for m in self.models]
        return ", then ".join(parts)

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        options: CallOptions = NO_CALL_OPTIONS,
    ) -> ModelResponse:
        on_text, cancel, on_retry, on_sent = (
            options.on_text,
            options.cancel,
            options.on_retry,
            options.on_sent,
        )
        self.last_failures = []
        failed: list[ProviderError] = []
        # One coroutine frame for the whole chain: every frame between the agent loop and the
        # HTTP client is resumed at each read of the stream, the first token's included.
        for index, model in enumerate(self.models):
            next_name = self.models[index + 1].name if index + 1 < len(self.models) else ""
            model_on_sent = on_sent
            if on_sent is not None and not model.reports_sent:
                on_sent()  # no wire to wait for: now
                model_on_sent = None
            attempt = 0
            while True:
                if cancel is not None and cancel.cancelled:
                    raise asyncio.CancelledError(cancel.reason or "cancelled")
                streamed = _CharCounter(on_text)
                try:
                    # The chain makes the retries: its models report none.
                    response = await model.complete(
                        messages,
                        tools,
                        CallOptions(
                            on_text=streamed if on_text else None,
                            cancel=cancel,
                            on_sent=model_on_sent,
                        ),
                    )
                except ProviderError as err:
                    delay_s = self._after_failure(
                        model, attempt, err, streamed.chars, on_retry, next_name
                    )
                    if delay_s is None:
                        failed.append(err)
                        break
                    await run_cancellable(self._sleep(delay_s), cancel)
                    attempt += 1
                    continue
                response.provider = response.provider or model.name
                response.model = response.model or getattr(model, "model", "")
                return response
            if failed[-1].kind in FINAL_KINDS:
                break
        raise _combined(failed)

    def _after_failure(
        self,
        model: Model,
        attempt: int,
        err: ProviderError,
        streamed_chars: int,
        on_retry: RetryCallback | None,
        next_name: str,
    ) -> float | None:
        """Record a failed attempt and tell the caller of a retry or failover; returns the wait
        before retrying this model, or None to move on (fail over, or stop on a final kind)."""
        if not err.provider:
            err.provider = model.name
        self.last_failures.append((model.name, attempt, err))
        delay_s = retry_delay_s(err, attempt)
        if err.kind in FINAL_KINDS:
            return None
        if on_retry is not None and (delay_s is not None or next_name):
            on_retry(
                RetryNotice(
                    provider=model.name,
                    attempt=attempt + 1,
                    max_attempts=MAX_ATTEMPTS if err.kind in RETRIED_KINDS else 1,
                    kind=err.kind,
                    message=" ".join(str(err).split()),
                    action="failover" if delay_s is None else "retry",
                    delay_s=delay_s or 0.0,
                    next_provider=model.name if delay_s is not None else next_name,
                    discarded_chars=streamed_chars,
                )
            )
        return delay_s


class _CharCounter:
    """Passes streamed text on, counting it (what a failed attempt already showed)."""

    def __init__(self, on_text: TextCallback | None) -> None:
        self.on_text = on_text
        self.chars = 0

    def __call__(self, text: str) -> None:
        self.chars += len(text)
        if self.on_text is not None:
            self.on_text(text)


def _brief(error: ProviderError) -> str:
    text = f"{error.provider or 'provider'}: {error.kind}"
    if not error.status:
        return text
    # The request too: with several providers failing, which URL answered what is the clue.
    sent = f" from {error.request}" if error.request else ""
    return text + f" (HTTP {error.status}{sent})"


def _combined(failed: list[ProviderError]) -> ProviderError:
    last = failed[-1]
    if len(failed) == 1:
        return last
    others = "; ".join(_brief(e) for e in failed[:-1])
    combined = ProviderError(
        last.kind,
        f"{last.args[0]} (all {len(failed)} providers failed; before it: {others})",
        provider=last.provider,
        url=last.url,
        status=last.status,
        retry_after_s=last.retry_after_s,
        request=last.request,
    )
    combined.failures = failed  # type: ignore[attr-defined]
    return combined
