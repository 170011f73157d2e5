"""A throwaway self-signed certificate for a Hub's TLS listener on 127.0.0.1."""

from __future__ import annotations

import subprocess
from pathlib import Path


def self_signed(directory: Path) -> tuple[Path, Path]:
    """`(certificate, key)` for IP 127.0.0.1, valid for a day, made by `openssl req`."""
    cert, key = directory / "hub.crt", directory / "hub.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key
