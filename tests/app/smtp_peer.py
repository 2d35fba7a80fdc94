#!/usr/bin/python3
"""A real SMTP peer for perfwatch's tests: aiosmtpd on loopback with STARTTLS required and AUTH
for one user; each accepted message is saved as NNNN.eml in a directory.

usage: smtp_peer.py PORT OUTDIR CERT KEY USER PASSWORD
       smtp_peer.py PORT OUTDIR --plain     (no TLS and no AUTH offered at all)
"""
import pathlib
import signal
import ssl
import sys

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

port, outdir = sys.argv[1:3]
plain = sys.argv[3:4] == ["--plain"]
if not plain:
    cert, key, user, password = sys.argv[3:7]
out = pathlib.Path(outdir)


class Saver:
    async def handle_DATA(self, server, session, envelope):
        n = len(list(out.glob("*.eml")))
        tmp = out / f"{n:04d}.part"
        tmp.write_bytes(envelope.original_content or envelope.content)
        tmp.rename(out / f"{n:04d}.eml")
        return "250 Message accepted for delivery"


def authenticator(server, session, envelope, mechanism, auth_data):
    if (isinstance(auth_data, LoginPassword) and auth_data.login.decode() == user
            and auth_data.password.decode() == password):
        return AuthResult(success=True)
    return AuthResult(success=False, handled=False)


if plain:
    controller = Controller(Saver(), hostname="127.0.0.1", port=int(port))
else:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    controller = Controller(Saver(), hostname="127.0.0.1", port=int(port), tls_context=context,
                            require_starttls=True, authenticator=authenticator, auth_require_tls=True)
controller.start()
print("ready", flush=True)
signal.sigwait({signal.SIGTERM, signal.SIGINT})
controller.stop()
