from posttrain_server.billing import prices


def test_price_table_has_cpu_pool():
    assert "cpu" in prices.POOLS
