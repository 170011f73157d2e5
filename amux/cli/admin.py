"""`amux system config` and `amux principal`: owner-only administration (SPEC §3, §4).

Both talk to the Hub over the owner's local connection (the Hub refuses anyone
else); the Hub applies a change at once. Output and errors are JSON like
`amux memory`. `add`, `token` and `delegate` print `{"principal", "token",
"token_id"}`: the token is shown this once and stored by the Hub only as a digest.
"""

from __future__ import annotations

import argparse
from typing import Any

from amux.client.args import strict_parser
from amux.client.cli import run
from amux.client.connection import find_connection
from amux.client.transport import HubClient


def _call(path: str, body: dict[str, Any]) -> Any:
    with HubClient(find_connection()) as client:
        return client.call(path, body)


def config_main(argv: list[str]) -> int:
    parser = strict_parser(prog="amux system config", description="Read or change Hub "
                           "configuration (memory.enabled, isolation.enabled). Owner only.")
    commands = parser.add_subparsers(dest="action", required=True, metavar="COMMAND",
                                     parser_class=type(parser))
    key = ("memory.enabled, isolation.enabled, listeners.shared_socket, listeners.tls_address, "
           "listeners.tls_cert or listeners.tls_key")
    get = commands.add_parser("get", help="print a key's effective value")
    get.add_argument("key", help=key)
    put = commands.add_parser("set", help="set a key (true/false); applies at once")
    put.add_argument("key", help=key)
    put.add_argument("value", help="true or false; a path or address for listeners.*")
    return run("amux system config", parser.parse_args, argv,
               lambda args: _call("/v1/admin/config", vars(args)))


def principal_main(argv: list[str]) -> int:
    parser = strict_parser(prog="amux principal", description="Manage who may use this Hub's "
                           "memory. Owner only; changes apply at once.")
    commands = parser.add_subparsers(dest="action", required=True, metavar="COMMAND",
                                     parser_class=type(parser))
    existing = "the principal's name"
    add = commands.add_parser("add", help="a new principal (its id is NAME) and its first token")
    add.add_argument("name", help="the new principal's id, usually its Unix user name")
    alias = commands.add_parser("alias", help="another login name sharing NAME's memory")
    alias.add_argument("name", help=existing)
    alias.add_argument("alias", help="the other login (Unix user) name")
    token = commands.add_parser("token", help="one more login token for NAME")
    token.add_argument("name", help=existing)
    revoke = commands.add_parser("revoke", help="revoke one token (--token ID) or all (--all)")
    revoke.add_argument("name", help=existing)
    which = revoke.add_mutually_exclusive_group(required=True)
    which.add_argument("--token", dest="token_id", help="the token id to revoke")
    which.add_argument("--all", action="store_true", help="revoke every token of NAME")
    delegate = commands.add_parser("delegate", help="a delegated token carrying a binding")
    delegate.add_argument("name", help=existing)
    delegate.add_argument("--binding", help="global or principal:<sha256> (default: NAME's "
                          "current scope)")
    delegate.add_argument("--ttl", type=float, help="seconds until it expires (default: never)")
    commands.add_parser("list", help="principals, aliases and token ids (no secrets)")

    def act(args: argparse.Namespace) -> Any:
        body = {key: value for key, value in vars(args).items()
                if value is not None and value is not False}
        return _call("/v1/admin/principals", body)

    return run("amux principal", parser.parse_args, argv, act)


def secrets_main(argv: list[str]) -> int:
    parser = strict_parser(prog="amux system secrets", description="The secret guard's "
                           "per-scope allow list: a false positive's fingerprint (from the "
                           "secret_detected error) allowed for one scope only. Owner only; "
                           "there is no global off switch.")
    commands = parser.add_subparsers(dest="action", required=True, metavar="COMMAND",
                                     parser_class=type(parser))
    for action, text in (("allow", "allow this fingerprint in the scope"),
                         ("remove", "take an allowed fingerprint back")):
        command = commands.add_parser(action, help=text)
        command.add_argument("fingerprint", help="from the secret_detected error's "
                             "`fingerprint` field")
        _scope_options(command)
    _scope_options(commands.add_parser("list", help="the scope's allowed fingerprints"))

    def act(args: argparse.Namespace) -> Any:
        body = {key: value for key, value in vars(args).items() if value is not None}
        return _call("/v1/admin/secrets", body)

    return run("amux system secrets", parser.parse_args, argv, act)


def _scope_options(command: argparse.ArgumentParser) -> None:
    which = command.add_mutually_exclusive_group()
    which.add_argument("--principal", help="the scope of this principal (default: the owner's)")
    which.add_argument("--binding", help="the scope with this binding (global or "
                       "principal:<sha256>)")
