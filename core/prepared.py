"""Reads whose SQL is compiled once, not on every call.

Django builds a queryset and compiles it to SQL anew on every call. For the small reads the
campaign page is drawn from after each event (a dozen statements for the board, ten for a
turn), building and compiling cost two to four times what the rest of the read does
(docs/performance.md#prepared_readspy-what-compiling-a-read-once-saves). A `prepared` read is
a function of its arguments that returns a queryset. Its first call on a database compiles it
with a stand-in ("probe") for each argument and notes where each probe landed among the
statement's parameters; every later call runs that statement with the real values and hands
the rows to the queryset's own iterable, so what it returns (model instances with their
`select_related` rows, `values()` dicts, `values_list()` tuples, each column converted as the
backend converts it) is what `list(build(*args))` returns.

An argument whose probe is not among the parameters went into the SQL itself (a slice's LIMIT)
or into nothing: it is a static argument, and the read is compiled once per value of it, as it
is for a flag (a bool, None) and for each length of a list (an `__in` lookup). So the rules for
`build`: it depends on its arguments alone (not on the clock, nor on any other value read
while it builds: the statement keeps what the first build saw), and its arguments are values,
never branched on except as such flags.
"""

import datetime
import itertools
import threading
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
from django.core.exceptions import EmptyResultSet, FullResultSet, ValidationError
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet

_probes = itertools.count(1_000_003)  # distinct integers, unlike the constants of a read
MAX_STATEMENTS = 64  # kept per read; past it, a new static value is read as a plain queryset
_INT64 = (-(2**63), 2**63 - 1)
PLAIN = object()  # run as a plain queryset: there is no statement to prepare


def _clone(thing: Any) -> Any:
    """A shallow copy that runs nothing: `copy.copy` of a queryset would evaluate it (its
    `__getstate__` fetches the rows)."""
    clone = object.__new__(type(thing))
    clone.__dict__.update(thing.__dict__)
    return clone


class _Statement:
    """One read's statement on one database: its SQL, its parameters (a slot for each
    argument's value), and the queryset and compiler set up for it, to iterate the rows through."""

    def __init__(self, queryset: QuerySet, compiler: Any, sql: str, slots: list[Any]) -> None:
        self.queryset, self.compiler, self.sql, self.slots = queryset, compiler, sql, slots

    def rows(self, alias: str, args: list[Any]) -> list[Any]:
        params = [slot(args) if isinstance(slot, _Slot) else slot for slot in self.slots]
        compiler = _clone(self.compiler)
        compiler.connection = _Preparing(connections[alias])  # this thread's connection
        compiler.as_sql = lambda *_, **__: (self.sql, params)
        query = _clone(self.queryset._query)
        query.get_compiler = lambda *_, **__: compiler
        queryset = _clone(self.queryset)
        # `_query`: the `query` setter would make a `values_list()` read `values()` dicts
        queryset._query, queryset._result_cache, queryset._prefetch_done = query, None, False
        return list(queryset)


class _Preparing:
    """A connection as a compiler uses it, whose cursors prepare each statement on the server
    (`prepared_cursor`): a read compiled once is then also parsed and planned once."""

    def __init__(self, wrapped: Any) -> None:
        self._wrapped = wrapped

    def cursor(self) -> Any:
        return prepared_cursor(self._wrapped)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wrapped, name)


class _Slot:
    """Where an argument's value goes among the parameters, in the form the backend took it."""

    def __init__(self, index: int, form: Callable[[Any], Any]) -> None:
        self.index, self.form = index, form

    def __call__(self, args: list[Any]) -> Any:
        return self.form(args[self.index])


def _is_flag(value: Any) -> bool:
    return value is None or isinstance(value, bool)


def _probe(value: Any) -> Any:
    """A stand-in of the argument's type, unlike any value a read holds; None: no probe (the
    argument is static)."""
    if isinstance(value, int):
        return next(_probes)
    if isinstance(value, uuid.UUID):
        return uuid.uuid4()
    if isinstance(value, str):  # in a UUID's form: a UUID field takes it, a text field too
        return str(uuid.uuid4())
    if isinstance(value, datetime.datetime):
        return datetime.datetime(1999, 1, 1, microsecond=next(_probes) % 10**6, tzinfo=value.tzinfo)
    return None


def _uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _forms(probe: Any, alias: str) -> list[tuple[Any, Callable[[Any], Any]]]:
    """The probe as a backend may pass it among the parameters (a UUID as its hex string on
    SQLite, a datetime as its text), each with how to put a real value in that form."""
    if isinstance(probe, datetime.datetime):
        adapt = connections[alias].ops.adapt_datetimefield_value
        return [(probe, lambda v: v), (adapt(probe), adapt)]
    if isinstance(probe, uuid.UUID):
        return [(probe, _uuid), (probe.hex, lambda v: _uuid(v).hex), (str(probe), str)]
    if isinstance(probe, str):
        as_uuid = uuid.UUID(probe)
        return [(probe, lambda v: v), (as_uuid, _uuid), (as_uuid.hex, lambda v: _uuid(v).hex)]
    return [(probe, lambda v: v)]


def _flat(args: tuple[Any, ...]) -> list[Any]:
    """The arguments with each list's items in its place: the values a statement takes."""
    flat: list[Any] = []
    for a in args:
        flat.extend(a if isinstance(a, list | tuple) else [a])
    return flat


class prepared:  # noqa: N801 (a decorator, named as functools' are)
    """`build(*args)` -> a queryset; calling the prepared read returns `list(build(*args))`,
    from a statement compiled once per database and per static argument (the module's
    docstring)."""

    def __init__(self, build: Callable[..., QuerySet]) -> None:
        self.build = build
        self.__doc__ = build.__doc__
        self._statements: dict[tuple[Any, ...], _Statement] = {}
        self._static: dict[tuple[Any, ...], Any] = {}  # by shape: the static arguments, or PLAIN
        self._lock = threading.Lock()

    def __call__(self, *args: Any) -> list[Any]:
        alias = DEFAULT_DB_ALIAS
        shape = (connections[alias].vendor, *(_shape(a) for a in args))
        static = self._static.get(shape)
        statement = None
        if static is not None and static is not PLAIN:
            statement = self._statements.get(_key(shape, static, args))
        if statement is None and static is not PLAIN:
            with self._lock:
                statement = self._prepare(alias, shape, args)
        values = _flat(args)
        if statement in (None, PLAIN) or any(
            type(v) is int and not _INT64[0] <= v <= _INT64[1] for v in values
        ):  # no statement for it (above), or a number beyond any column: Django answers none
            return list(self.build(*args))
        return statement.rows(alias, values)

    def get(self, *args: Any) -> Any:
        """The one row the read finds, as `QuerySet.get` answers: its model's DoesNotExist when
        there is none, MultipleObjectsReturned when there are more."""
        found = self(*args)
        if len(found) == 1:
            return found[0]
        model = self.build(*args).model  # a miss is rare: the queryset built to name it
        if not found:
            raise model.DoesNotExist(f"{model.__name__} matching query does not exist.")
        raise model.MultipleObjectsReturned(f"get() returned {len(found)} {model.__name__}s.")

    def first(self, *args: Any) -> Any:
        """The first row the read finds, or None."""
        found = self(*args)
        return found[0] if found else None

    def _prepare(self, alias: str, shape: tuple[Any, ...], args: tuple[Any, ...]) -> Any:
        """The statement for these arguments, compiled now if need be; PLAIN when the read is
        to be run as a plain queryset: a shape that compiles to nothing (`__in` an empty list:
        Django answers without a query), or a new value of a static argument past
        MAX_STATEMENTS."""
        static = self._static.get(shape)
        if static is None:  # first sight of this shape: which arguments are static
            try:
                static = self._find_static(alias, args)
            except (EmptyResultSet, FullResultSet):
                static = PLAIN
            except (ValueError, TypeError, ValidationError):  # a probe the read refuses (a
                static = frozenset(range(len(args)))  # UUID's text where a number goes)
            self._static[shape] = static
        if static is PLAIN:
            return PLAIN
        key = _key(shape, static, args)
        if key not in self._statements:
            if len(self._statements) >= MAX_STATEMENTS:
                return PLAIN
            try:
                self._statements[key] = self._compile(alias, args, static)
            except (EmptyResultSet, FullResultSet):
                return PLAIN
        return self._statements[key]

    def _find_static(self, alias: str, args: tuple[Any, ...]) -> frozenset[int]:
        """The arguments whose probe is not among the compiled parameters (or that have none)."""
        probes, _, params = self._built(alias, args, frozenset())
        return frozenset(
            index
            for index, items in enumerate(probes)
            if items is None or not all(_found(p, params, alias) for p in items)
        )

    def _compile(self, alias: str, args: tuple[Any, ...], static: frozenset[int]) -> _Statement:
        probes, queryset, _ = self._built(alias, args, static)
        compiler = queryset.query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        slots: list[Any] = list(params)
        at = 0  # each argument's first position among the flat values
        for arg, items in zip(args, probes, strict=True):
            for offset, probe in enumerate(items or []):
                for form, convert in _forms(probe, alias):
                    for position, param in enumerate(params):
                        if type(param) is type(form) and param == form:
                            slots[position] = _Slot(at + offset, convert)
            at += len(arg) if isinstance(arg, list | tuple) else 1
        return _Statement(queryset, compiler, sql, slots)

    def _built(
        self, alias: str, args: tuple[Any, ...], static: frozenset[int]
    ) -> tuple[list[list[Any] | None], QuerySet, list[Any]]:
        """The read built with probes in place of every argument but the static ones (and
        those with no probe: flags, other types), each argument's probes (None: its own value
        went in), and the parameters it compiles to."""
        probes: list[list[Any] | None] = []
        stand_ins = []
        for index, arg in enumerate(args):
            items = list(arg) if isinstance(arg, list | tuple) else [arg]
            made = None if index in static or _is_flag(arg) else [_probe(i) for i in items]
            if made is not None and any(p is None for p in made):
                made = None
            probes.append(made)
            if made is None:
                stand_ins.append(arg)
            else:
                stand_ins.append(type(arg)(made) if isinstance(arg, list | tuple) else made[0])
        queryset = self.build(*stand_ins)
        if queryset.db != alias:
            raise TypeError(f"{self.build!r} reads {queryset.db!r}, not {alias!r}")
        _, params = queryset.query.get_compiler(using=alias).as_sql()
        return probes, queryset, list(params)


def _shape(arg: Any) -> Any:
    """What of an argument its statement depends on besides its value: a list's length, a
    flag's value, the type of anything else."""
    if isinstance(arg, list | tuple):
        return ("list", len(arg))
    if _is_flag(arg):
        return ("flag", arg)
    return type(arg).__name__


def _found(probe: Any, params: list[Any], alias: str) -> bool:
    forms = _forms(probe, alias)
    return any(type(param) is type(form) and param == form for form, _ in forms for param in params)


def _key(shape: tuple[Any, ...], static: frozenset[int], args: tuple[Any, ...]) -> tuple[Any, ...]:
    """A statement's key: its shape and the values of its static arguments."""
    values = (args[i] for i in sorted(static))
    return (*shape, *(tuple(v) if isinstance(v, list) else v for v in values))


def prepared_cursor(using: Any = None) -> Any:
    """A cursor for the hot statements (the dispatch's campaign lock, a tool's read and write of
    its target, the log's append; every `prepared` read) on `using` (default: the default
    database's connection): Django's (its wrappers, its query log), over a psycopg cursor
    that binds the parameters on the server and prepares each statement there once per
    connection, on PostgreSQL; elsewhere Django's own. Parsing and planning such a statement at
    every call costs about what running it does, and quoting its parameters into the text costs
    more than sending them apart (docs/performance.md, `dispatch_overhead.py`). While queries
    are logged (DEBUG, a test counting them) it runs as any other statement: the query log
    reads the statement's text from psycopg's cursor, which a prepared run does not keep. The
    statements name their columns, so a column a migration adds leaves a prepared one valid."""
    wrapper = connections[DEFAULT_DB_ALIAS] if using is None else using
    if wrapper.vendor != "postgresql" or wrapper.queries_logged:
        return wrapper.cursor()
    wrapper.ensure_connection()  # `prepare_threshold` comes with it (config/settings.py)
    return wrapper._prepare_cursor(_ServerPrepared(wrapper.connection))


class _ServerPrepared(psycopg.Cursor):
    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        return super().execute(query, params, prepare=True, **kwargs)
