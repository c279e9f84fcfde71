"""Reading raw HTTP/1.1 answers off a socket, for tests that send requests byte
for byte (tests/integration/test_stays_up.py, test_fair_use.py, test_fencing.py,
test_workers.py)."""


def read_response(s, timeout=10.0):
    """One HTTP/1.1 response with a Content-Length body, as (head, body)."""
    s.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, f"closed before a response head: {data!r}"
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    n = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            n = int(value.strip())
    while len(rest) < n:
        chunk = s.recv(65536)
        assert chunk, "closed inside the response body"
        rest += chunk
    return head.decode("latin-1"), rest[:n]


def recv_answer(s):
    """All the gateway sent on s up to its S3 error document's end, EOF or a
    socket error (a write cut mid-body may see the connection reset)."""
    resp = b""
    try:
        while b"</Error>" not in resp:
            chunk = s.recv(65536)
            if not chunk:
                break
            resp += chunk
    except OSError:
        pass
    return resp


def status(head):
    return int(head.split(" ", 2)[1])


def code(body):
    """The S3 error document's <Code>, or None."""
    t = body.decode("utf-8", "replace")
    return t.split("<Code>", 1)[1].split("</Code>", 1)[0] if "<Code>" in t else None
