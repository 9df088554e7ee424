"""The record's fields are declared once (helpers.record.fields): the record type, the checks, the required keys
and the constants code names them by all come from that one declaration."""

from __future__ import annotations

import pytest

from helpers.record import check, schema
from helpers.record import fields as F


def test_every_constant_is_its_declared_name():
    consts = {k: v for k, v in vars(F).items() if k.isupper() and isinstance(v, str)}
    assert consts and all(v in F.FIELDS and k == v.upper() for k, v in consts.items())
    assert set(consts.values()) == set(F.FIELDS)  # each declared field has its constant


def test_record_type_keys_are_declared_fields():
    declared = set(schema.Record.__annotations__)
    assert declared <= set(F.FIELDS)
    assert set(schema.REQUIRED_KEYS) <= declared
    assert schema.REQUIRED_KEYS == F.REQUIRED


def test_checks_come_from_the_declaration():
    assert check._FIELDS is F.CHECKED
    assert F.CHECKED[F.SAMPLES_PER_S] == "pos?"
    bad = {**schema.empty_record({"workload": "mnist", "backend": "jax", "device": "cpu"}, "p"), "status": "ok",
           F.SAMPLES_PER_S: -1.0}
    assert "'samples_per_s'" in check.problem(bad)
    assert check.problem({**bad, F.SAMPLES_PER_S: 12.5}) is None


def test_a_field_declared_twice_is_refused():
    with pytest.raises(ValueError, match="declared twice"):
        F.field(F.SAMPLES_PER_S, "float", "samples/s", "pos?", "again")


def test_knob_fields_link_the_knobs_table():
    assert F.FIELDS[F.BATCH_SIZE].knob and not F.FIELDS[F.SAMPLES_PER_S].knob
