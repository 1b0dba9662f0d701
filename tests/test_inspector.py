

def test_public_names_are_the_curated_list_and_documented() -> None:
    import langmem_edge.inspector as inspector

    assert sorted(inspector.__all__) == sorted([
        "DEFAULT_HOST", "DEFAULT_PORT", "LOOPBACK_ALLOWED_HOSTS", "TOKEN_ENV", "check_bind",
        "create_app", "serve"])
    for name in ("check_bind", "create_app", "serve"):
        assert getattr(inspector, name).__doc__, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        inspector.nope  # noqa: B018
