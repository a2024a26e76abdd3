#!/usr/bin/env python3
"""`rlf dashboard` in a real browser (tests/serve/test_dashboard.cpp): Debian's
headless chromium driven through chromium-driver by selenium. Loads the page,
waits for the finished run's curves, checks that the charts have drawn pixels,
the config and samples panels are filled, appends steps to the live run's
metrics.jsonl (a partial line first) and waits for the page to show them,
saves a screenshot, and fails on any browser console error.

  python dashboard_browser_check.py URL LIVE_RUN_DIR SCREENSHOT.png N_METRICS
Prints one JSON object with what it saw."""
import json
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

PIXELS_JS = """
return [...document.querySelectorAll('#charts canvas')].map(c => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
  return n;
});"""


# The page re-renders its tables as it polls: read text in one script call, never through element handles.
def texts(driver, selector):
    return driver.execute_script("return [...document.querySelectorAll(arguments[0])].map(e => e.innerText)", selector)


def count(driver, selector):
    return driver.execute_script("return document.querySelectorAll(arguments[0]).length", selector)


def wait_for(what, fn, timeout=30):
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


def main():
    url, live_dir, screenshot, n_metrics = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    opts = Options()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1600"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    out = {}
    try:
        driver.get(url + "/?poll_ms=300")
        wait_for("the charts", lambda: count(driver, "#charts canvas") == n_metrics)
        out["charts"] = count(driver, "#charts canvas")
        pixels = wait_for("drawn curves", lambda: (lambda p: p if all(x > 200 for x in p) else None)(driver.execute_script(PIXELS_JS)))
        out["min_drawn_pixels"] = min(pixels)
        rows = texts(driver, "#runs tbody tr")
        out["runs"] = rows
        assert len(rows) == 2, rows
        assert "20 / 20" in rows[0] and "finished" in rows[0], rows[0]
        assert "3 / 10" in rows[1] and "running" in rows[1], rows[1]
        config = driver.find_element(By.ID, "config").text
        assert '"steps": 20' in config, config[:300]
        samples = wait_for("samples", lambda: texts(driver, "#samples .sample"))
        out["samples"] = len(samples)
        assert "Once upon a time" in samples[0], samples[0]

        # The live run writes: a partial line (not shown), then whole lines.
        with open(live_dir + "/metrics.jsonl", "a") as f:
            f.write('{"step": 4, "reward/mean": 0.6, "loss": 0.4')
            f.flush()
            time.sleep(1.0)
            assert "3 / 10" in texts(driver, "#runs tbody tr")[1], "a partial line was shown"
            f.write(', "kl/ref": 0.02}\n')
            for s in (5, 6):
                f.write(json.dumps({"step": s, "reward/mean": 0.6 + 0.05 * s, "loss": 0.4, "kl/ref": 0.02}) + "\n")
        wait_for("the live run's new steps",
                 lambda: "6 / 10" in texts(driver, "#runs tbody tr")[1])
        out["live_updated"] = True
        # Filtering the charts by name.
        box = driver.find_element(By.ID, "filter")
        box.send_keys("reward")
        wait_for("the filter", lambda: count(driver, "#charts canvas") == 1)
        box.clear()
        box.send_keys(" ")  # an input event with an empty filter again
        wait_for("all charts back", lambda: count(driver, "#charts canvas") == n_metrics)
        time.sleep(0.5)
        driver.save_screenshot(screenshot)
        logs = driver.get_log("browser")
        errors = [l for l in logs if l.get("level") == "SEVERE"]
        out["console_entries"] = len(logs)
        out["console_errors"] = [l.get("message") for l in errors]
        assert not errors, errors
    finally:
        driver.quit()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
