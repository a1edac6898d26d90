"""A real SMTP server for Sleuth's email notification tests (aiosmtpd, from Debian's
python3-aiosmtpd), on a loopback port the kernel picks.

    smtp_receiver.py CERT KEY USER PASSWORD     STARTTLS required, then a login
    smtp_receiver.py --plain USER PASSWORD      no TLS offered at all (logins accepted!)

It prints one JSON line per happening on stdout: {"port": N} once listening, then
{"auth": LOGIN, "tls": BOOL} for every login attempt and {"mail": {...}} for every
message taken, its body decoded from its transfer encoding."""

import asyncio
import email
import email.policy
import json
import ssl
import sys

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword


def say(value):
    print(json.dumps(value), flush=True)


class Handler:
    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        body = message.get_body(preferencelist=("plain",))
        say({"mail": {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "subject": str(message["subject"]),
            "message_id": str(message["message-id"]),
            "body": body.get_content() if body is not None else "",
            "tls": session.ssl is not None,
            "authenticated": bool(session.authenticated),
        }})
        return "250 2.0.0 Message accepted"


def main():
    plain = sys.argv[1] == "--plain"
    if plain:
        user, password = sys.argv[2:4]
        context = None
    else:
        cert, key, user, password = sys.argv[1:5]
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)

    def authenticator(server, session, envelope, mechanism, auth_data):
        login = auth_data.login.decode() if isinstance(auth_data, LoginPassword) else None
        say({"auth": login, "tls": session.ssl is not None})
        ok = (
            isinstance(auth_data, LoginPassword)
            and auth_data.login == user.encode()
            and auth_data.password == password.encode()
        )
        return AuthResult(success=ok)

    def factory():
        return SMTP(
            Handler(),
            hostname="smtp.test",
            tls_context=context,
            require_starttls=not plain,
            authenticator=authenticator,
            auth_required=True,
            auth_require_tls=not plain,
        )

    async def serve():
        server = await asyncio.get_running_loop().create_server(factory, host="127.0.0.1", port=0)
        say({"port": server.sockets[0].getsockname()[1]})
        await server.serve_forever()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
