//! Which failed deliveries charge a key, against the loopback stage: an outage behind a
//! gateway (503 to every POST, 404 to a GET) charges nothing however many runs meet it, a storm
//! after many deliveries stops within 150 failed requests, and poison left alone at the end of a
//! manifest is charged while the application is shown serving, and quarantined in max_attempts
//! runs. Each with and without a health URL.

use serde_json::Value;

use crate::faults::{execute, manifest, manifest_with_max_attempts, quarantined};
use crate::stage::Stage;
use crate::util::Dir;

/// `base`, and where the stage's health check is (answering `health`): not at all, or by
/// --health-url.
fn health_args(stage: &Stage, health: Option<u16>, base: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = base.iter().map(|a| a.to_string()).collect();
    if let Some(status) = health {
        stage.behaviour.lock().unwrap().health_status = Some(status);
        args.extend(["--health-url".to_string(), stage.health_url()]);
    }
    args
}

fn outcome(report: &Value, field: &str) -> u64 {
    report["outcomes"][field].as_u64().unwrap_or_else(|| panic!("no outcome {field}: {report}"))
}

/// Every key delivered exactly once over all runs.
fn each_delivered_once(stage: &Stage, keys: &[String]) {
    let delivered = stage.delivered();
    let wrong: Vec<_> = keys.iter().filter(|k| delivered.get(*k) != Some(&1)).collect();
    assert!(wrong.is_empty(), "{} keys not delivered exactly once, e.g. {:?}", wrong.len(), wrong.first());
}

/// Three runs while every POST gets 503 and a GET of the route 404 (a gateway before a dead
/// backend), then the backend is back. With max_attempts 1, one charge would show as a
/// quarantined entry on the run after: none may. Small manifests end before the storm guard
/// can act (the run's verdict decides), larger ones trip it.
#[test]
fn an_outage_behind_a_gateway_charges_nothing_over_three_runs_and_all_land_after() {
    for (n, health) in [(12, None), (300, None), (12, Some(503)), (300, Some(503))] {
        let dir = Dir::new();
        let keys = manifest_with_max_attempts(&dir, n, 1);
        let stage = Stage::start();
        let extra = health_args(&stage, health, &["--retries", "2"]);
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        {
            let mut b = stage.behaviour.lock().unwrap();
            b.default_status = Some(503);
            b.get_status = Some(404);
        }
        for run_no in 1..=3 {
            let (run, report) = execute(&dir, &stage.url, &extra);
            let case = format!("{n} entries, health {health:?}, run {run_no}");
            assert_eq!(run.code, 4, "{case}: {}", run.stderr);
            assert_eq!((outcome(&report, "replay_failed"), outcome(&report, "poison_attempts")), (0, 0), "{case}: {report}");
            assert_eq!(report["unfinished"].as_u64(), Some(n as u64), "{case}: {report}");
            assert!(run.stderr.contains("no key"), "{case}: {}", run.stderr);
        }
        {
            let mut b = stage.behaviour.lock().unwrap();
            b.default_status = None;
            b.get_status = None;
            b.health_status = None;
        }
        let (run, report) = execute(&dir, &stage.url, &extra);
        assert_eq!(run.code, 0, "{n} entries, health {health:?}: {}", run.stderr);
        assert_eq!(outcome(&report, "replayed"), n as u64, "{report}");
        assert_eq!(quarantined(&dir), 0, "an outage poisons nothing");
        each_delivered_once(&stage, &keys);
    }
}

/// 1,500 deliveries, then every POST gets 503 (a GET 404): the storm guard stops the run
/// within 150 failed requests at --concurrency 8, exit 4, nothing charged, whatever a health
/// URL says; once the backend is back, the rest lands and nothing is quarantined.
#[test]
fn the_storm_guard_stops_an_outage_after_1500_deliveries_within_150_failed_requests() {
    for health in [None, Some(503), Some(200)] {
        let dir = Dir::new();
        let keys = manifest_with_max_attempts(&dir, 2000, 1);
        let stage = Stage::start();
        let extra = health_args(&stage, health, &["--concurrency", "8"]);
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        {
            let mut b = stage.behaviour.lock().unwrap();
            b.fail_after = Some(1500);
            b.get_status = Some(404);
        }
        let (run, report) = execute(&dir, &stage.url, &extra);
        assert_eq!(run.code, 4, "health {health:?}: {}", run.stderr);
        assert!(run.stderr.contains("storm guard"), "{}", run.stderr);
        let failed = stage.failed_in_outage();
        assert!(failed <= 150, "health {health:?}: {failed} failed requests after the outage began");
        assert_eq!((outcome(&report, "replayed"), outcome(&report, "replay_failed")), (1500, 0), "health {health:?}: {report}");
        assert_eq!(report["unfinished"], 500, "{report}");
        stage.behaviour.lock().unwrap().fail_after = None;
        let (run, report) = execute(&dir, &stage.url, &extra);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(outcome(&report, "replayed"), 500, "{report}");
        assert_eq!(quarantined(&dir), 0, "nothing was charged");
        each_delivered_once(&stage, &keys);
    }
}

/// The application answers 500 to every POST (its database is down, say) while a GET of the
/// route gets 404: however it answers a GET, a storm of its errors stops the run and charges
/// nothing.
#[test]
fn a_500_for_every_message_stops_the_run_and_charges_nothing() {
    let dir = Dir::new();
    let keys = manifest_with_max_attempts(&dir, 300, 1);
    let stage = Stage::start();
    {
        let mut b = stage.behaviour.lock().unwrap();
        b.default_status = Some(500);
        b.get_status = Some(404);
    }
    for _ in 0..3 {
        let (run, report) = execute(&dir, &stage.url, &["--retries", "1"]);
        assert_eq!(run.code, 4, "{}", run.stderr);
        assert!(run.stderr.contains("storm guard"), "{}", run.stderr);
        assert_eq!(outcome(&report, "replay_failed"), 0, "{report}");
    }
    stage.behaviour.lock().unwrap().default_status = None;
    let (run, _) = execute(&dir, &stage.url, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(quarantined(&dir), 0);
    each_delivered_once(&stage, &keys);
}

/// 25 of 400 entries the target fails with `poison` every time, the rest 200. Run 1 charges
/// those the target served others just after; in the runs after only the 25 are left, no
/// delivery succeeds, and what the probe proves decides: a 500 is charged when the route
/// answers a GET at all (here 405: GET unsupported) or a health URL answers 2xx, a 503 only
/// on a health URL's 2xx. Charged three times, they are quarantined on the fourth run: no run
/// loops them forever, and the exit status says what happened each time.
fn poison_left_alone_is_quarantined(poison_status: u16, get_status: u16, health: Option<u16>) {
    let case = format!("poison {poison_status}, GET {get_status}, health {health:?}");
    let dir = Dir::new();
    let keys = manifest(&dir, 400);
    let stage = Stage::start();
    let extra = health_args(&stage, health, &["--retries", "2"]);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let poison: Vec<String> = keys.iter().step_by(16).take(25).cloned().collect();
    {
        let mut b = stage.behaviour.lock().unwrap();
        b.get_status = Some(get_status);
        for k in &poison {
            b.status.insert(k.clone(), poison_status);
        }
    }
    let (run, report) = execute(&dir, &stage.url, &extra);
    assert_eq!(run.code, 3, "{case}: replay failures, every entry finished: {}", run.stderr);
    assert_eq!((outcome(&report, "replayed"), outcome(&report, "replay_failed")), (375, 25), "{case}: {report}");
    for run_no in 2..=3 {
        let (run, report) = execute(&dir, &stage.url, &extra);
        assert_eq!(run.code, 3, "{case}, run {run_no}: {}", run.stderr);
        assert_eq!((outcome(&report, "replay_failed"), report["unfinished"].as_u64()), (25, Some(0)), "{case}, run {run_no}: {report}");
        assert!(run.stderr.contains("health"), "{}", run.stderr);
    }
    let (run, report) = execute(&dir, &stage.url, &extra);
    assert_eq!(run.code, 0, "{case}: {}", run.stderr);
    assert_eq!(outcome(&report, "poison_attempts"), 25, "{case}: {report}");
    assert_eq!(quarantined(&dir), 25);
    assert!(stage.seen.lock().unwrap().probes >= 2, "the target was asked");
    // Three runs, two tries each: no key sent more.
    assert!(poison.iter().all(|k| stage.count(k) == 6), "{case}: {:?}", poison.iter().map(|k| stage.count(k)).collect::<Vec<_>>());
}

#[test]
fn a_500_left_alone_is_charged_when_the_route_answers_a_get_or_the_health_url_2xx() {
    poison_left_alone_is_quarantined(500, 405, None);
    poison_left_alone_is_quarantined(500, 404, Some(200));
}

#[test]
fn a_503_left_alone_is_charged_only_when_the_health_url_answers_2xx() {
    poison_left_alone_is_quarantined(503, 404, Some(200));
}

/// The same 25 poison keys while the health URL says the target is down (503): after the
/// first run (where deliveries of other keys judge them) no run charges them, and none is ever
/// quarantined.
#[test]
fn poison_left_alone_is_never_charged_while_the_health_url_says_down() {
    for poison_status in [500, 503] {
        let dir = Dir::new();
        let keys = manifest(&dir, 400);
        let stage = Stage::start();
        let extra = health_args(&stage, Some(503), &["--retries", "2"]);
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        {
            let mut b = stage.behaviour.lock().unwrap();
            b.get_status = Some(405);
            for k in keys.iter().step_by(16).take(25) {
                b.status.insert(k.clone(), poison_status);
            }
        }
        let (_, report) = execute(&dir, &stage.url, &extra);
        assert_eq!(outcome(&report, "replay_failed") + report["unfinished"].as_u64().unwrap(), 25, "{report}");
        for run_no in 2..=5 {
            let (run, report) = execute(&dir, &stage.url, &extra);
            assert_eq!(run.code, 4, "run {run_no}: {}", run.stderr);
            assert_eq!((outcome(&report, "replay_failed"), report["unfinished"].as_u64()), (0, Some(25)), "run {run_no}: {report}");
            assert!(run.stderr.contains("does not answer its health probe"), "{}", run.stderr);
        }
        assert_eq!(quarantined(&dir), 0, "poison {poison_status}");
    }
}

/// The last 25 entries meet an outage (503) after 35 deliveries: successes earlier in the run
/// prove nothing, so no run charges them while it lasts; once it is over they land.
#[test]
fn the_last_messages_during_an_outage_are_never_charged() {
    let dir = Dir::new();
    let keys = manifest(&dir, 60);
    let stage = Stage::start();
    let last: Vec<String> = keys[35..].to_vec();
    {
        let mut b = stage.behaviour.lock().unwrap();
        for k in &last {
            b.status.insert(k.clone(), 503);
        }
    }
    let (run, report) = execute(&dir, &stage.url, &["--retries", "1"]);
    assert_eq!((run.code, outcome(&report, "replayed"), outcome(&report, "replay_failed")), (4, 35, 0), "{report}");
    // Now the whole target is down: 503 to everything, its route's GET included.
    stage.behaviour.lock().unwrap().default_status = Some(503);
    for run_no in 2..=5 {
        let (run, report) = execute(&dir, &stage.url, &["--retries", "1"]);
        assert_eq!(run.code, 4, "run {run_no}: {}", run.stderr);
        assert_eq!((outcome(&report, "replay_failed"), report["unfinished"].as_u64()), (0, Some(25)), "run {run_no}: {report}");
        // Every entry left is listed with its last error.
        let listed: Vec<&str> = report["unfinished_keys"].as_array().unwrap().iter().map(|u| u["key"].as_str().unwrap()).collect();
        assert_eq!(listed.len(), 25, "{report}");
        assert!(report["unfinished_keys"][0]["error"].as_str().unwrap().contains("503"), "{report}");
    }
    {
        let mut b = stage.behaviour.lock().unwrap();
        b.default_status = None;
        b.status.clear();
    }
    let (run, report) = execute(&dir, &stage.url, &[]);
    assert_eq!((run.code, outcome(&report, "replayed")), (0, 25), "{report}");
    assert_eq!(quarantined(&dir), 0, "an outage poisons nothing");
}
