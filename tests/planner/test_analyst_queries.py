"""Everyday analyst queries on a small NULL-heavy shop (issue 14, "done when"): window
functions, grouping, quantiles, joins of private and public tables, NOT IN/EXISTS and
dates, each answered exactly as DuckDB answers it (docs/design.md §Window functions,
§Grouping, §Aggregates).  One fixture for the module; the tables are small so the file
stays fast."""
from __future__ import annotations

import duckdb
import pytest

import dodb
from dodb.compare import snapshot

from ..operators.util import assert_same_rows


@pytest.fixture(scope="module")
def shop():
    con = duckdb.connect()
    con.execute("CREATE TABLE customers (cid INTEGER PRIMARY KEY, name VARCHAR, region VARCHAR, signup DATE, "
                "tier INTEGER)")
    con.execute("INSERT INTO customers SELECT range, CASE WHEN range % 6 = 0 THEN NULL ELSE 'c' || range END, "
                "CASE WHEN range % 5 = 0 THEN NULL ELSE ['north', 'south', 'east'][range % 3 + 1] END, "
                "DATE '2022-01-01' + CAST(range * 23 AS INTEGER), CASE WHEN range % 4 = 0 THEN NULL "
                "ELSE range % 3 END FROM range(30)")
    con.execute("CREATE TABLE orders (oid INTEGER PRIMARY KEY, cid INTEGER, pid INTEGER, amount DECIMAL(10,2), "
                "qty INTEGER, day DATE, status VARCHAR)")
    con.execute("INSERT INTO orders SELECT range, CASE WHEN range % 17 = 0 THEN NULL ELSE range % 27 END, "
                "range % 6, CASE WHEN range % 9 = 0 THEN NULL ELSE ((range * 53) % 97) + 0.25 END, "
                "CASE WHEN range % 7 = 0 THEN NULL ELSE range % 5 + 1 END, "
                "DATE '2024-01-01' + CAST((range * 5) % 75 AS INTEGER), "
                "CASE WHEN range % 8 = 0 THEN NULL ELSE ['open', 'shipped', 'returned'][range % 3 + 1] END "
                "FROM range(80)")
    con.execute("CREATE TABLE products AS SELECT * FROM (VALUES (0, 'apple', 'fruit', 1.50), (1, 'pear', 'fruit', "
                "2.00), (2, 'kale', 'veg', 3.25), (3, 'leek', 'veg', NULL), (4, 'salt', NULL, 0.99), "
                "(5, 'tea', 'drink', 4.10)) v(pid, pname, category, price)")
    con.execute("CREATE TABLE regions AS SELECT * FROM (VALUES ('north', 'ann'), ('south', 'bob'), ('east', NULL), "
                "('west', 'dee')) v(region, manager)")
    d = dodb.attach(con, seed=11, allow_insecure=True)
    d.oracle = snapshot(con)
    d.set_budget(epsilon=1e7, delta=0.5)
    d.protect("customers", "cid", max_contributions=1, keys=[["cid"]], widths={"name": 4, "region": 8})
    d.protect("orders", "cid", parent=("customers", "cid"), max_contributions=3, keys=[["oid"]],
              widths={"status": 8})
    yield d
    d.close()


QUERIES = {
    # running totals, moving averages, gaps between orders
    "running_total_per_customer":
        "SELECT cid, oid, sum(amount) OVER (PARTITION BY cid ORDER BY day, oid) AS running FROM orders",
    "running_total_all_orders_by_day":
        "SELECT day, sum(amount) OVER (ORDER BY day) AS to_date FROM orders",
    "moving_average_three_orders":
        "SELECT oid, avg(amount) OVER (ORDER BY oid ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS ma3 FROM orders",
    "days_since_previous_order":
        "SELECT oid, day - lag(day) OVER (PARTITION BY cid ORDER BY day, oid) AS gap FROM orders",
    "next_order_amount":
        "SELECT oid, lead(amount, 1, 0) OVER (PARTITION BY cid ORDER BY oid) AS nxt FROM orders",
    "cumulative_orders_per_day":
        "SELECT DISTINCT day, count(*) OVER (ORDER BY day) AS so_far FROM orders",
    "first_and_last_status":
        "SELECT oid, first_value(status) OVER (PARTITION BY cid ORDER BY oid) AS first_status, "
        "last_value(status) OVER (PARTITION BY cid ORDER BY oid ROWS BETWEEN UNBOUNDED PRECEDING AND "
        "UNBOUNDED FOLLOWING) AS last_status FROM orders",
    # ranks and top-k per group
    "top_two_orders_per_status":
        "SELECT status, oid, amount FROM orders QUALIFY row_number() OVER (PARTITION BY status "
        "ORDER BY amount DESC NULLS LAST, oid) <= 2",
    "top_customer_per_region":
        "SELECT region, cid, revenue FROM (SELECT c.region, c.cid, sum(o.amount) AS revenue, rank() OVER "
        "(PARTITION BY c.region ORDER BY sum(o.amount) DESC NULLS LAST, c.cid) AS r FROM customers c "
        "JOIN orders o ON c.cid = o.cid GROUP BY c.region, c.cid) t WHERE r = 1",
    "dense_rank_of_amounts":
        "SELECT oid, dense_rank() OVER (ORDER BY amount DESC) AS dr FROM orders",
    "quartile_of_each_order":
        "SELECT oid, ntile(4) OVER (ORDER BY amount, oid) AS quartile FROM orders",
    "percent_rank_within_status":
        "SELECT oid, percent_rank() OVER (PARTITION BY status ORDER BY qty) AS pr FROM orders",
    "rank_of_regions_by_revenue":
        "SELECT c.region, sum(o.amount) AS revenue, rank() OVER (ORDER BY sum(o.amount) DESC) AS r "
        "FROM customers c JOIN orders o ON c.cid = o.cid GROUP BY c.region",
    "top_five_customers":
        "SELECT cid, sum(amount) AS revenue FROM orders GROUP BY cid ORDER BY revenue DESC NULLS LAST, cid LIMIT 5",
    # shares of a total
    "share_of_status_total":
        "SELECT oid, status, amount / sum(amount) OVER (PARTITION BY status) AS share FROM orders",
    "share_of_category_revenue":
        "SELECT p.category, sum(o.amount) AS revenue, sum(o.amount) / sum(sum(o.amount)) OVER () AS share "
        "FROM orders o JOIN products p ON o.pid = p.pid GROUP BY p.category",
    # medians, quantiles and spread per group
    "median_amount_per_status": "SELECT status, median(amount) FROM orders GROUP BY status",
    "p90_amount_per_region":
        "SELECT c.region, quantile_cont(o.amount, 0.9) AS p90 FROM customers c JOIN orders o ON c.cid = o.cid "
        "GROUP BY c.region",
    "quantile_disc_qty_per_product": "SELECT pid, quantile_disc(qty, 0.25) AS q1 FROM orders GROUP BY pid",
    "median_order_per_tier":
        "SELECT c.tier, median(o.qty) AS m FROM customers c JOIN orders o ON c.cid = o.cid GROUP BY c.tier",
    "stddev_per_status": "SELECT status, stddev_samp(amount) AS sd, var_pop(qty) AS vp FROM orders GROUP BY status",
    "correlation_qty_amount": "SELECT corr(qty, amount) AS r, covar_pop(qty, amount) AS c FROM orders",
    "biggest_order_per_region":
        "SELECT c.region, arg_max(o.oid, o.amount) AS biggest FROM customers c JOIN orders o ON c.cid = o.cid "
        "GROUP BY c.region",
    "earliest_customer_name": "SELECT min_by(name, signup) AS first_name FROM customers WHERE name IS NOT NULL",
    # grouping sets, rollups, filters, having
    "rollup_region_status_having":
        "SELECT c.region, o.status, count(*) AS n FROM customers c JOIN orders o ON c.cid = o.cid "
        "GROUP BY ROLLUP (c.region, o.status) HAVING count(*) > 2",
    "cube_region_tier": "SELECT region, tier, count(*) AS n, grouping(region, tier) AS g FROM customers "
                        "GROUP BY CUBE (region, tier)",
    "grouping_sets_status_product":
        "SELECT status, pid, sum(qty) AS q FROM orders GROUP BY GROUPING SETS ((status), (pid), ())",
    "count_filter_per_region":
        "SELECT c.region, count(*) FILTER (WHERE o.status = 'open') AS open_orders, "
        "count(*) FILTER (WHERE o.status IS NULL) AS unknown FROM customers c JOIN orders o ON c.cid = o.cid "
        "GROUP BY c.region",
    "group_by_all_month": "SELECT date_trunc('month', day) AS month, status, count(*) AS n FROM orders GROUP BY ALL",
    "having_average_above": "SELECT pid, avg(amount) AS a FROM orders GROUP BY pid HAVING avg(amount) > 45",
    "distinct_customers_and_revenue_per_month":
        "SELECT month(day) AS m, count(DISTINCT cid) AS buyers, sum(amount) AS revenue FROM orders GROUP BY m",
    # NULL-heavy data
    "counts_with_nulls": "SELECT count(*), count(amount), count(status), sum(amount), avg(qty) FROM orders",
    "null_status_is_a_group": "SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY status NULLS FIRST",
    "coalesced_region": "SELECT coalesce(region, 'unknown') AS r, count(*) AS n FROM customers GROUP BY r",
    "distinct_from_open": "SELECT count(*) AS n FROM orders WHERE status IS DISTINCT FROM 'open'",
    "sum_over_nothing": "SELECT sum(amount), count(*), min(day) FROM orders WHERE amount > 100000",
    "orders_without_customer": "SELECT count(*) AS n, sum(amount) AS s FROM orders WHERE cid IS NULL",
    "null_tier_average": "SELECT tier, avg(cid) AS a FROM customers GROUP BY tier",
    # joins of private and public tables, semi/anti joins
    "revenue_per_category":
        "SELECT p.category, count(*) AS n, sum(o.amount) AS revenue FROM orders o JOIN products p "
        "ON o.pid = p.pid GROUP BY p.category",
    "revenue_per_manager":
        "SELECT r.manager, sum(o.amount) AS revenue FROM orders o JOIN customers c ON o.cid = c.cid "
        "JOIN regions r ON c.region = r.region GROUP BY r.manager",
    "customers_with_order_counts":
        "SELECT c.cid, count(o.oid) AS n FROM customers c LEFT JOIN orders o ON c.cid = o.cid GROUP BY c.cid",
    "customers_without_returns":
        "SELECT count(*) AS n FROM customers WHERE cid NOT IN (SELECT cid FROM orders WHERE status = 'returned')",
    "customers_without_known_returns":
        "SELECT count(*) AS n FROM customers WHERE cid NOT IN (SELECT cid FROM orders WHERE status = 'returned' "
        "AND cid IS NOT NULL)",
    "regions_with_customer_counts":
        "SELECT r.region, r.manager, count(c.cid) AS n FROM regions r LEFT JOIN customers c ON r.region = c.region "
        "GROUP BY r.region, r.manager",
    "customers_with_a_big_order":
        "SELECT count(*) AS n FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.cid = c.cid "
        "AND o.amount > 60)",
    "customers_in_fruit_orders":
        "SELECT region, count(*) AS n FROM customers WHERE cid IN (SELECT o.cid FROM orders o JOIN products p "
        "ON o.pid = p.pid WHERE p.category = 'fruit') GROUP BY region",
    "cte_top_orders_with_product_names":
        "WITH top AS (SELECT oid, pid, amount FROM orders QUALIFY rank() OVER (ORDER BY amount DESC NULLS LAST) "
        "<= 5) SELECT t.oid, p.pname, t.amount FROM top t JOIN products p ON t.pid = p.pid",
    # strings and dates
    "name_lengths": "SELECT length(name) AS len, count(*) AS n FROM customers GROUP BY len",
    "upper_names_of_tier_one": "SELECT upper(name) AS u FROM customers WHERE tier = 1",
    "signups_per_year": "SELECT year(signup) AS y, count(*) AS n FROM customers GROUP BY y",
    "orders_in_february": "SELECT count(*) AS n FROM orders WHERE day BETWEEN DATE '2024-02-01' AND DATE '2024-02-29'",
    "status_buckets":
        "SELECT CASE WHEN amount IS NULL THEN 'none' WHEN amount < 30 THEN 'small' ELSE 'large' END AS b, "
        "count(*) AS n FROM orders GROUP BY b",
    "union_of_two_summaries":
        "SELECT 'orders' AS what, count(*) AS n FROM orders UNION ALL SELECT 'customers', count(*) FROM customers",
}


@pytest.mark.parametrize("name", list(QUERIES))
def test_analyst_query_equals_duckdb(shop, name):
    sql = QUERIES[name]
    ordered = " ORDER BY " in sql.split(")")[-1] and "LIMIT" not in sql
    got = shop.sql(sql, epsilon=1.0, delta=1e-6).arrow()
    want = shop.oracle.sql(sql).to_arrow_table()
    assert got.column_names == want.column_names
    assert_same_rows(got, want, ordered=ordered)


def test_there_are_at_least_forty_queries():
    assert len(QUERIES) >= 40
