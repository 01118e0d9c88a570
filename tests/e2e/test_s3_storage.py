"""The same job with S3-compatible storage: datasets, checkpoints and the adapter in a bucket.

A second stack (its own broker, so the session stack's workers never see its messages) runs
against a real S3 server (moto) on loopback; the web server, platform worker and training
worker all reach storage only through it.
"""

from __future__ import annotations

import io
import tarfile

import boto3
import pytest
from devstack import Stack

from tests.e2e.conftest import Api, _free_port
from tests.s3_server import S3_ENV, s3_server
from workers import env as posttrain_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _own_broker(process_env: dict[str, str], tmp_path) -> dict[str, str]:
    url = posttrain_env.broker_url()
    if url.startswith("redis://"):
        base = url.rsplit("/", 1)[0] if url.count("/") > 2 else url
        return {**process_env, "CELERY_BROKER_URL": f"{base}/14",
                "POSTTRAIN_WORK_DIR": str(tmp_path / "work")}
    return {**process_env, "POSTTRAIN_VAR_DIR": str(tmp_path / "var"),
            "POSTTRAIN_MODELS_ROOT": str(posttrain_env.models_root())}


def test_a_job_runs_the_same_with_s3_storage(stack, api, toy_data, tmp_path):
    with s3_server("posttrain-e2e") as endpoint:
        s3_env = {**_own_broker(stack.env, tmp_path), **S3_ENV,
                  "POSTTRAIN_STORAGE_URL": "s3://posttrain-e2e/objects",
                  "POSTTRAIN_S3_ENDPOINT_URL": endpoint}
        s3_stack = Stack(port=_free_port(), env=s3_env, log_dir=stack.log_dir / "s3")
        with s3_stack:
            client = Api(s3_stack.url, api.key)
            train = client.upload(toy_data["train"])
            assert train["status"] == "processed", train
            job = client.create_job(model="posttrain-tiny", training_file=train["id"],
                                    eval_samples=10, method={"type": "supervised", "supervised":
                                    {"hyperparameters": {"n_epochs": 1, "batch_size": 32}}})
            done = client.wait_job(job["id"])
            assert done["status"] == "succeeded", done["error"]
            adapter = client.http.get(f"/models/{done['fine_tuned_model']}/content")
            assert adapter.status_code == 200
            names = tarfile.open(fileobj=io.BytesIO(adapter.content)).getnames()
            assert "adapter_model.safetensors" in names
            original = toy_data["train"].read_bytes()
            assert client.http.get(f"/files/{train['id']}/content").content == original

        bucket = boto3.client("s3", endpoint_url=endpoint)
        keys = {item["Key"] for item in
                bucket.list_objects_v2(Bucket="posttrain-e2e")["Contents"]}
        assert any(key.startswith("objects/files/") for key in keys)
        assert any(key.startswith(f"objects/jobs/{job['id']}/attempt-1/step-")
                   for key in keys)
        assert f"objects/jobs/{job['id']}/model.tar" in keys
    assert not (posttrain_env.storage_root() / "jobs" / job["id"]).exists()
