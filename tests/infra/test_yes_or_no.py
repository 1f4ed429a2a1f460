"""One way to read a yes-or-no value (functions/config.py `read_flag`): the CDK context and
the local stack read theirs as the functions read their settings."""

from pathlib import Path

import pytest

from functions.config import read_flag
from infra.local.stack import LocalConfig
from infra.names import StackSettings
from tests.unit.design.test_settings import YES_OR_NO


@pytest.mark.parametrize(("written", "read"), YES_OR_NO)
def test_the_cdk_context_and_the_local_stack_read_yes_or_no_as_the_functions_do(written, read):
    context = {"auto_create_conversations": written}.get
    assert StackSettings.from_context(context, Path("."), Path(".")).auto_create_conversations is read
    local = LocalConfig.from_env({"AUTO_CREATE_CONVERSATIONS": written, "USE_REAL_TWILIO": written})
    assert (local.auto_create_conversations, local.use_real_twilio) == (read, read)
    assert read_flag(written) is read


@pytest.mark.parametrize("written", ["maybe", "yess", "2", "tru e"])
def test_a_value_that_is_neither_yes_nor_no_is_an_error_everywhere_never_false(written):
    with pytest.raises(ValueError, match="yes-or-no"):
        read_flag(written)
    with pytest.raises(ValueError, match="auto_create_conversations"):
        StackSettings.from_context({"auto_create_conversations": written}.get, Path("."), Path("."))
    with pytest.raises(ValueError, match="yes-or-no"):
        LocalConfig.from_env({"USE_REAL_OPENAI": written})


def test_a_json_boolean_in_cdk_context_is_taken_as_it_is():
    assert StackSettings.from_context({"auto_create_conversations": True}.get, Path("."), Path("."))
    assert read_flag(False) is False
