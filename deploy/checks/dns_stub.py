"""A one-purpose DNS server for scripts/check-deploy: answers every A query
with 127.0.0.1 and everything else with an empty answer. It lets the container
check resolve a service name (as compose's DNS would) without a network.

Usage: dns_stub.py ADDRESS PORT   (runs until killed)
"""
import socket
import struct
import sys


def answer(query: bytes) -> bytes:
    ident, _flags, qdcount = struct.unpack("!HHH", query[:6])
    # Walk the first question's name to find its type.
    i = 12
    while query[i] != 0:
        i += query[i] + 1
    qtype, _qclass = struct.unpack("!HH", query[i + 1:i + 5])
    question = query[12:i + 5]
    is_a = qdcount == 1 and qtype == 1
    header = struct.pack("!HHHHHH", ident, 0x8180, 1, 1 if is_a else 0, 0, 0)
    if not is_a:
        return header + question
    record = struct.pack("!HHHIH", 0xC00C, 1, 1, 5, 4) + socket.inet_aton("127.0.0.1")
    return header + question + record


def main() -> None:
    address, port = sys.argv[1], int(sys.argv[2])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((address, port))
    while True:
        query, peer = sock.recvfrom(512)
        try:
            sock.sendto(answer(query), peer)
        except (IndexError, struct.error):
            continue


if __name__ == "__main__":
    main()
