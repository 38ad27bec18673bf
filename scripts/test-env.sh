#!/usr/bin/env bash
# What the test suite needs from the machine, beside Node.js and node_modules.
#
#   scripts/test-env.sh check    (first step of `npm test`) fails with one line naming the Debian
#                                packages of the tools that are missing; it installs nothing.
#   scripts/test-env.sh prepare  (first step of `npm run test:all`) installs those packages with
#                                apt-get, starts PostgreSQL and Redis when they do not answer (and
#                                installs them when they are not there), and makes a database the
#                                tests can use. It prints what it does, and the variables the tests
#                                should run with as `export NAME=value` lines on fd 3.
#
# No tool is ever skipped: a test that needs one fails without it, so the suite asks for all of them.
set -euo pipefail

say() { echo "outdial tests: $*" >&2; }
fail() { say "$*"; exit 1; }

CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
DEFAULT_PG_URL="postgres://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS_URL="redis://127.0.0.1:6379"
OWN_PG_URL="postgres://outdial_test:outdial_test@127.0.0.1:5432/outdial_test"

# The tools the suite runs, each with the Debian (and Ubuntu) package that provides it:
# Chromium drives the dashboard's browser tests; sipp is the far end of the SIP tests, with sox to
# make its audio; the speech loop speaks with espeak-ng and listens with pocketsphinx and its US
# English model; promtool checks the /metrics text; script (a pseudo-terminal) tests the TTY output.
missing_packages() {
  local missing=()
  [ -x "$CHROMIUM" ] || missing+=("chromium:$CHROMIUM")
  command -v sipp >/dev/null 2>&1 || missing+=("sip-tester:sipp")
  command -v espeak-ng >/dev/null 2>&1 || missing+=("espeak-ng:espeak-ng")
  command -v sox >/dev/null 2>&1 || missing+=("sox:sox")
  command -v pocketsphinx_continuous >/dev/null 2>&1 || missing+=("pocketsphinx:pocketsphinx_continuous")
  [ -d /usr/share/pocketsphinx/model/en-us ] || missing+=("pocketsphinx-en-us:/usr/share/pocketsphinx/model/en-us")
  command -v promtool >/dev/null 2>&1 || missing+=("prometheus:promtool")
  command -v script >/dev/null 2>&1 || missing+=("bsdutils:script")
  echo "${missing[@]}"
}

# "pkg:tool pkg:tool" -> "tool (Debian package pkg), ..." and the bare package list.
describe() { local out=() e; for e in $1; do out+=("${e#*:} (package ${e%%:*})"); done; local IFS=','; echo "${out[*]}" | sed 's/,/, /g'; }
packages_of() { local out=() e; for e in $1; do out+=("${e%%:*}"); done; echo "${out[*]}"; }

# apt-get as root, or through sudo; one line naming the packages when neither is possible.
apt_install() {
  local packages=("$@") run=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then run=(sudo); else
      fail "missing Debian packages ${packages[*]}: install them as root (apt-get install ${packages[*]}), then run again"
    fi
  fi
  command -v apt-get >/dev/null 2>&1 ||
    fail "missing packages ${packages[*]} and no apt-get to install them (the suite is made for Debian and Ubuntu): install them, then run again"
  say "installing ${packages[*]} (apt-get)"
  "${run[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${run[@]}" apt-get install -y -qq "${packages[@]}" >/dev/null
}

as_postgres() { (cd / && if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else sudo -n -u postgres "$@"; fi); }

url_host() { local rest="${1#*://}"; rest="${rest#*@}"; rest="${rest%%/*}"; echo "${rest%%:*}"; }
is_local() { case "$(url_host "$1")" in 127.0.0.1 | localhost | ::1 | '[::1]') return 0 ;; *) return 1 ;; esac; }

wait_for() { local _; for _ in $(seq 1 60); do "$@" && return 0; sleep 0.5; done; return 1; }

pg_answers() { pg_isready -q -d "$1" 2>/dev/null; }
pg_connects() { psql "$1" -qtAc 'select 1' >/dev/null 2>&1; }

prepare_postgres() {
  local url="${DATABASE_TEST_URL:-$DEFAULT_PG_URL}"
  command -v pg_isready >/dev/null 2>&1 || apt_install postgresql-client
  if ! pg_answers "$url"; then
    is_local "$url" || fail "PostgreSQL at $(url_host "$url") (DATABASE_TEST_URL) is not answering"
    if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
      apt_install postgresql
    fi
  fi
  # A machine with an init system starts the server as the package installs it.
  if ! pg_answers "$url"; then
    local version
    version="$(ls /etc/postgresql | sort -V | tail -n 1)"
    say "PostgreSQL is not answering; starting the $version/main cluster"
    if [ "$(id -u)" -eq 0 ]; then
      pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    else
      sudo -n pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    fi
    wait_for pg_answers "$url" || fail "PostgreSQL still does not answer at $(url_host "$url"):5432 (see /var/log/postgresql/)"
  fi
  if ! pg_connects "$url" && [ -z "${DATABASE_TEST_URL:-}" ] && pg_connects "$OWN_PG_URL"; then
    url="$OWN_PG_URL"
  fi
  if ! pg_connects "$url"; then
    # A fresh Debian PostgreSQL asks for a password over TCP and has no database "test". Given no
    # DATABASE_TEST_URL, make a role and a database of the tests' own (nothing else is changed).
    [ -z "${DATABASE_TEST_URL:-}" ] || fail "cannot connect to DATABASE_TEST_URL ($(url_host "$url")): check its user, password and database"
    say "$DEFAULT_PG_URL refuses the connection; creating the role and database outdial_test"
    as_postgres psql -qtAc "do \$\$ begin if not exists (select from pg_roles where rolname = 'outdial_test') then create role outdial_test login password 'outdial_test'; end if; end \$\$" >/dev/null
    as_postgres psql -qtAc "select 1 from pg_database where datname = 'outdial_test'" | grep -q 1 ||
      as_postgres createdb -O outdial_test outdial_test
    url="$OWN_PG_URL"
    pg_connects "$url" || fail "cannot connect to $url after creating it"
  fi
  say "PostgreSQL: $(url_host "$url"), database ${url##*/}"
  echo "export DATABASE_TEST_URL='$url'" >&3
}

redis_answers() { redis-cli -u "$1" ping 2>/dev/null | grep -q PONG; }

prepare_redis() {
  local url="${REDIS_TEST_URL:-$DEFAULT_REDIS_URL}"
  command -v redis-cli >/dev/null 2>&1 || apt_install redis-tools
  if ! redis_answers "$url"; then
    is_local "$url" || fail "Redis at $(url_host "$url") (REDIS_TEST_URL) is not answering"
    command -v redis-server >/dev/null 2>&1 || apt_install redis-server
  fi
  if ! redis_answers "$url"; then
    say "Redis is not answering; starting it on 127.0.0.1:6379 (nothing kept on disk)"
    local run=()
    [ "$(id -u)" -eq 0 ] || run=(sudo -n)
    "${run[@]}" mkdir -p /var/lib/redis /var/log/redis
    "${run[@]}" redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/outdial-tests.log || true
    wait_for redis_answers "$url" || fail "Redis still does not answer at 127.0.0.1:6379 (see /var/log/redis/outdial-tests.log)"
  fi
  say "Redis: ${url#*://}"
  echo "export REDIS_TEST_URL='$url'" >&3
}

case "${1:-}" in
  check)
    missing="$(missing_packages)"
    [ -z "$missing" ] ||
      fail "missing $(describe "$missing"): run npm run test:all to install them, or apt-get install $(packages_of "$missing")"
    # The tests use DATABASE_TEST_URL, else the default; after npm run test:all made the tests' own
    # database, the default refuses them (password) and every PostgreSQL file would fail on its own.
    url="${DATABASE_TEST_URL:-$DEFAULT_PG_URL}"
    if command -v psql >/dev/null 2>&1 && pg_answers "$url" && ! pg_connects "$url"; then
      if [ -z "${DATABASE_TEST_URL:-}" ] && pg_connects "$OWN_PG_URL"; then
        fail "$DEFAULT_PG_URL refuses the connection: export DATABASE_TEST_URL='$OWN_PG_URL' (made by npm run test:all), or run npm run test:all"
      fi
      fail "cannot connect to PostgreSQL at $(url_host "$url"), database ${url##*/} (DATABASE_TEST_URL or its default): check its user, password and database, or run npm run test:all"
    fi
    ;;
  prepare)
    { true >&3; } 2>/dev/null || exec 3>/dev/null
    missing="$(missing_packages)"
    if [ -n "$missing" ]; then
      # shellcheck disable=SC2046
      apt_install $(packages_of "$missing")
      missing="$(missing_packages)"
      [ -z "$missing" ] || fail "still missing after apt-get: $(describe "$missing")"
    fi
    prepare_postgres
    prepare_redis
    ;;
  *)
    echo "usage: scripts/test-env.sh check|prepare" >&2
    exit 2
    ;;
esac
