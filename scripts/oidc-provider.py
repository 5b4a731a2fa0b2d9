#!/usr/bin/env python3
"""A real OpenID provider for the key server's tests: django-oidc-provider
(PyPI, on Django), which no test here wrote, configured in code and served
on a free loopback port.

  oidc-provider.py DIR

Makes DIR/provider.sqlite3, an RS256 signing key, a user "alice" whose
password it writes to DIR/alice-password, and a confidential client
"coffer-key-server" (its secret in DIR/client-secret) allowed the resource
owner password grant with the openid scope. Then prints one line,
"issuer http://127.0.0.1:PORT/openid", and serves until killed. SIGHUP
replaces its signing key (a new kid) and prints "rotated KID".

A user signs in through the provider's own token endpoint:
  POST ISSUER/token  grant_type=password username=alice password=…
       client_id=coffer-key-server client_secret=… scope=openid
and the answer's id_token is an RS256 JWT the provider signed, whose
audience is the client id.
"""
import os
import secrets
import signal
import sys
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import django
from django.conf import settings


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        sys.stderr.write("oidc-provider: " + (format % args) + "\n")


class Server(WSGIServer):
    # One request at a time is enough for the tests; allow a backlog.
    request_queue_size = 64


def main(directory):
    # A parent may start us with signals blocked (the mask is inherited
    # across exec): SIGTERM must stop us and SIGHUP must rotate.
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    os.makedirs(directory, exist_ok=True)
    # Bind first: the issuer URL carries the port.
    httpd = make_server("127.0.0.1", 0, lambda environ, start: [], server_class=Server, handler_class=QuietHandler)
    port = httpd.server_address[1]
    site = f"http://127.0.0.1:{port}"
    settings.configure(
        DEBUG=False,
        SECRET_KEY=secrets.token_hex(32),
        ALLOWED_HOSTS=["127.0.0.1", "localhost"],
        INSTALLED_APPS=[
            "django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions", "oidc_provider",
        ],
        MIDDLEWARE=[
            "django.contrib.sessions.middleware.SessionMiddleware",
            "django.contrib.auth.middleware.AuthenticationMiddleware",
        ],
        ROOT_URLCONF=__name__,
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3",
                               "NAME": os.path.join(directory, "provider.sqlite3")}},
        TEMPLATES=[{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}],
        DEFAULT_AUTO_FIELD="django.db.models.AutoField",
        USE_TZ=True,
        SITE_URL=site,
        LOGIN_URL="/login/",
        OIDC_GRANT_TYPE_PASSWORD_ENABLE=True,
        OIDC_IDTOKEN_EXPIRE=600,
    )
    django.setup()

    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application
    from django.urls import include, path
    from oidc_provider.models import Client, ResponseType, RSAKey

    # This module is the URL configuration (ROOT_URLCONF).
    global urlpatterns
    urlpatterns = [path("openid/", include("oidc_provider.urls", namespace="oidc_provider"))]

    call_command("migrate", verbosity=0, interactive=False)
    if not RSAKey.objects.exists():
        call_command("creatersakey", stdout=open(os.devnull, "w"))
    password = secrets.token_urlsafe(18)
    user, _ = User.objects.get_or_create(username="alice")
    user.set_password(password)
    user.save()
    client_secret = secrets.token_urlsafe(24)
    client, _ = Client.objects.get_or_create(client_id="coffer-key-server", defaults={"name": "Coffer key server"})
    client.client_type = "confidential"
    client.client_secret = client_secret
    client.jwt_alg = "RS256"
    client.redirect_uris = [site + "/callback"]
    client.scope = ["openid"]
    client.require_consent = False
    client.save()
    client.response_types.set(ResponseType.objects.filter(value="code"))
    for name, value in (("alice-password", password), ("client-secret", client_secret)):
        path = os.path.join(directory, name)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            out.write(value + "\n")

    def rotate(signum, frame):
        # SIGHUP: a new signing key replaces the old one (a new kid), as a
        # provider rotates its keys; one line says it is done.
        RSAKey.objects.all().delete()
        call_command("creatersakey", stdout=open(os.devnull, "w"))
        print(f"rotated {RSAKey.objects.get().kid}", flush=True)

    signal.signal(signal.SIGHUP, rotate)
    httpd.set_app(get_wsgi_application())
    print(f"issuer {site}/openid", flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: oidc-provider.py DIR")
    main(sys.argv[1])
