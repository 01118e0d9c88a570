"""Safe extraction of downloaded archives, and what the SDK package may depend on."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import httpx
import pytest

import posttrain
from posttrain._archive import safe_extract

ROOT = Path(__file__).resolve().parents[2]


def tar_bytes(members: dict[str, bytes], *, link: tuple[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        if link:
            info = tarfile.TarInfo(link[0])
            info.type = tarfile.SYMTYPE
            info.linkname = link[1]
            tar.addfile(info)
    return buffer.getvalue()


def test_it_extracts_a_plain_archive(tmp_path):
    archive = tmp_path / "a.tar"
    archive.write_bytes(tar_bytes({"adapter_config.json": b"{}", "sub/weights.bin": b"123"}))

    written = safe_extract(archive, tmp_path / "out")

    assert (tmp_path / "out" / "sub" / "weights.bin").read_bytes() == b"123"
    assert len(written) == 2


@pytest.mark.parametrize("name", ["../escape.txt", "/tmp/h5-absolute.txt", "a/../../x"])
def test_it_refuses_members_outside_the_folder_and_writes_nothing(tmp_path, name):
    archive = tmp_path / "evil.tar"
    archive.write_bytes(tar_bytes({"fine.txt": b"ok", name: b"evil"}))

    with pytest.raises(posttrain.UnsafeArchiveError):
        safe_extract(archive, tmp_path / "out")

    assert not (tmp_path / "out" / "fine.txt").exists()
    assert not (tmp_path / "escape.txt").exists()


def test_it_refuses_links(tmp_path):
    archive = tmp_path / "link.tar"
    archive.write_bytes(tar_bytes({}, link=("passwd", "/etc/passwd")))

    with pytest.raises(posttrain.UnsafeArchiveError, match="link"):
        safe_extract(archive, tmp_path / "out")


def test_models_download_streams_and_unpacks_the_archive(tmp_path):
    payload = tar_bytes({"adapter_model.safetensors": b"weights"})
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.raw_path.decode())
        return httpx.Response(200, content=payload,
                              headers={"content-type": "application/x-tar"})

    client = posttrain.Posttrain(api_key="k", base_url="http://t/v1",
                                 http_client=httpx.Client(transport=httpx.MockTransport(handler)))
    target = client.models.download("ft:posttrain-tiny:org:x:abc", tmp_path / "adapter")

    assert (target / "adapter_model.safetensors").read_bytes() == b"weights"
    assert seen == ["/v1/models/ft:posttrain-tiny:org:x:abc/content"]
    assert sorted(os.listdir(tmp_path)) == ["adapter"]  # no temporary file left behind


def test_the_sdk_imports_neither_django_nor_torch():
    code = ("import sys, posttrain, posttrain.cli, posttrain.dataset_rules; "
            "print(sorted(m for m in ('django', 'torch', 'rest_framework', 'posttrain_server', "
            "'workers') if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "sdk" / "src")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, cwd="/", timeout=60, check=True)

    assert result.stdout.strip() == "[]"


def test_the_sdk_declares_only_httpx_and_pydantic():
    text = (ROOT / "sdk" / "pyproject.toml").read_text()
    dependencies = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    names = {line.strip().strip('",').split(">")[0].split("=")[0].split("<")[0]
             for line in dependencies.splitlines() if line.strip().startswith('"')}

    assert names == {"httpx", "pydantic"}


def test_the_workers_rules_are_the_sdks_rules():
    from posttrain import dataset_rules as sdk_rules
    from workers import dataset_rules as worker_rules

    for name in worker_rules.__all__:
        assert getattr(worker_rules, name) is getattr(sdk_rules, name)
