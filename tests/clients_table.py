#!/usr/bin/python3
"""Renders the README's client table from what the integration tests ran.

The client tests record each client they drove to the end (tests/integration/
clients_record.py) in build/clients.json; this prints that as a markdown
table.  Usage: tests/clients_table.py [build/clients.json] > table.md"""
import json
import sys
from pathlib import Path


def main():
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "build/clients.json")
    data = json.loads(path.read_text())
    print("| Client | How it sends a fencing token | What the tests ran through the gateway |")
    print("|---|---|---|")
    for client in sorted(data, key=str.lower):
        e = data[client]
        tested = "; ".join(e["tested"]).replace("|", "\\|")
        print(f"| {client} | {e['token'].replace('|', chr(92) + '|')} | {tested} |")


if __name__ == "__main__":
    main()
