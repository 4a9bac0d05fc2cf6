"""A bare aiohttp client: judge requests captured from a run POSTed again, the floor a judge's CPU is measured against.

Run: python bench/bare_client.py CAPTURE URL [--concurrency 64]. CAPTURE holds one request body a line, as the local
judge server's --capture writes them (tests/judge_server.py); each is POSTed to URL/chat/completions as it was sent,
at most --concurrency in flight on one keep-alive connection pool, and each answer is read as JSON and its message
taken out. Prints the number of answers. It imports nothing of the dashboard (bench/bench_run_cost.py runs it).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterator

import aiohttp


async def post_all(bodies: Iterator[bytes], url: str, concurrency: int) -> int:
    """POST every body, `concurrency` at a time; the number of answers, each a chat completion with a message."""
    answered = 0
    headers = {"Authorization": "Bearer bench", "Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency), headers=headers) as session:

        async def worker() -> None:
            nonlocal answered
            for body in bodies:  # one iterator shared by the workers: each body is sent once
                async with session.post(url, data=body) as response:
                    answer = json.loads(await response.read())
                if response.status != 200 or not isinstance(answer["choices"][0]["message"]["content"], str):
                    raise RuntimeError(f"the judge answered {response.status}: {answer}")
                answered += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return answered


def main(argv: list[str] | None = None) -> int:
    """Send the captured requests again; prints how many were answered."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("capture", help="the captured request bodies, one a line")
    parser.add_argument("url", help="the judge's base URL (…/v1)")
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight (default 64)")
    args = parser.parse_args(argv)
    with open(args.capture, "rb") as lines:
        bodies = (line.rstrip(b"\n") for line in lines if line.strip())
        answered = asyncio.run(post_all(bodies, args.url.rstrip("/") + "/chat/completions", args.concurrency))
    print(answered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
