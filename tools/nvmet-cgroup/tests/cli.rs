// SPDX-License-Identifier: GPL-2.0
//! The real binary against fixture trees: bind, limit, status, save,
//! restore, and bad inputs that must change nothing.

mod common;

use std::fs;
use std::os::unix::fs::MetadataExt;

use common::{d, last_line, FakeSystemctl, Fixture, BOOT1, BOOT2, NQN_A, NQN_B};

#[test]
fn bind_writes_inode_and_enables_io_top_down() {
    let f = Fixture::new();
    let out = f.ok(&["bind", NQN_A, "1", "--slice", "tenants-b.slice"]);
    assert!(out.contains("tenants.slice/tenants-b.slice"), "{out}");
    assert_eq!(
        f.cgroup_id(NQN_A, 1),
        f.ino("tenants.slice/tenants-b.slice")
    );
    assert_eq!(f.read("cgroup/cgroup.subtree_control"), "+io\n");
    assert_eq!(
        f.read("cgroup/tenants.slice/cgroup.subtree_control"),
        "+io\n"
    );
    // The leaf's own subtree_control is not touched.
    assert_eq!(
        f.read("cgroup/tenants.slice/tenants-b.slice/cgroup.subtree_control"),
        ""
    );

    // Already enabled above: no second +io; --cgroup takes an absolute
    // path under the mount.
    let abs = f.cg("tenant-a").display().to_string();
    f.ok(&["bind", NQN_A, "2", "--cgroup", &abs]);
    assert_eq!(f.cgroup_id(NQN_A, 2), f.ino("tenant-a"));
    assert_eq!(f.read("cgroup/cgroup.subtree_control"), "+io\n");

    // --create makes the directory.
    f.ok(&["bind", NQN_A, "3", "--cgroup", "tenant-new", "--create"]);
    assert!(f.cg("tenant-new").is_dir());
    assert_eq!(f.cgroup_id(NQN_A, 3), f.ino("tenant-new"));

    // Binding again is a no-op; unbind writes 0.
    let out = f.ok(&["bind", NQN_A, "2", "--cgroup", "tenant-a"]);
    assert!(out.contains("already bound"), "{out}");
    f.ok(&["unbind", NQN_A, "2"]);
    assert_eq!(f.cgroup_id(NQN_A, 2), 0);
}

#[test]
fn cgroup_paths_outside_the_mount_or_the_root_are_refused() {
    let f = Fixture::new();
    let mount = f.cg("").display().to_string();
    let mount = mount.trim_end_matches('/').to_string();
    let evil = f.p("evil").display().to_string();
    let climb = format!("{mount}/../evil");
    let mount_slash = format!("{mount}/");
    let mount_dot = format!("{mount}/tenant-a/..");
    let outside = "is not under the cgroup2 mount";
    let root = "is the root cgroup";
    let cases: Vec<(&str, &str)> = vec![
        (&evil, outside),
        (&climb, outside),
        ("/tmp/evil", outside),
        // Once re-rooted under the mount; now refused.
        ("/tenant-a", outside),
        ("../evil", "climbs out of the cgroup2 mount"),
        ("tenant-a/../../evil", "climbs out of the cgroup2 mount"),
        ("", "is empty"),
        ("/", root),
        (".", root),
        ("tenant-a/..", root),
        (&mount, root),
        (&mount_slash, root),
        (&mount_dot, root),
    ];
    for (path, want) in cases {
        for create in [false, true] {
            let mut args = vec!["bind", NQN_A, "2", "--cgroup", path];
            if create {
                args.push("--create");
            }
            let before = f.snapshot();
            let (code, out, err) = f.run(&args);
            assert_eq!(code, 1, "{args:?} succeeded: {out}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.starts_with("nvmet-cgroup: error: "), "{args:?}: {err}");
            assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
            assert_eq!(f.snapshot(), before, "{args:?} changed the tree");
        }
    }
    assert!(!f.p("evil").exists());
    assert_eq!(f.cgroup_id(NQN_A, 2), 0);

    // systemd's name for the root cgroup.
    for create in [false, true] {
        let mut args = vec!["bind", NQN_A, "2", "--slice=-.slice"];
        if create {
            args.push("--create");
        }
        let before = f.snapshot();
        let (code, _, err) = f.run(&args);
        assert_eq!(code, 1, "{args:?} succeeded");
        assert!(err.contains(root), "{args:?}: {err}");
        assert_eq!(f.snapshot(), before, "{args:?} changed the tree");
    }

    // Relative to the mount, with harmless "." and "..".
    f.ok(&["bind", NQN_A, "2", "--cgroup", "./noio/../tenant-a"]);
    assert_eq!(f.cgroup_id(NQN_A, 2), f.ino("tenant-a"));
    let abs = format!("{mount}/x/../tenants.slice/./tenants-b.slice");
    f.ok(&["bind", NQN_A, "2", "--cgroup", &abs]);
    assert_eq!(
        f.cgroup_id(NQN_A, 2),
        f.ino("tenants.slice/tenants-b.slice")
    );
}

/// A bind that fails after it created cgroups and wrote +io undoes both.
/// In a fixture the second of two new levels can't get +io: a fixture's
/// mkdir makes no cgroup.subtree_control to write it to.
#[test]
fn failed_bind_removes_the_cgroups_it_created() {
    let args = ["bind", NQN_A, "2", "--cgroup", "new/child", "--create"];
    let check = |f: &common::Fixture| {
        let (code, out, err) = f.run(&args);
        assert_eq!(code, 1, "succeeded: {out}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("new/cgroup.subtree_control")
                && err.contains("rolled back the cgroup directories created and the +io written"),
            "{err}"
        );
        assert!(!f.cg("new").exists());
        assert_eq!(f.cgroup_id(NQN_A, 2), 0);
    };

    // io already on at the root: only the directories to remove.
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    let before = f.snapshot();
    check(&f);
    assert_eq!(f.snapshot(), before, "the tree changed");

    // io off at the root: +io written there is taken back with -io (a
    // fixture's file keeps both writes, the kernel's would read as before).
    let f = Fixture::new();
    let mut before = f.snapshot();
    check(&f);
    let subtree = std::path::PathBuf::from("cgroup/cgroup.subtree_control");
    assert_eq!(before.get(&subtree).map(String::as_str), Some(""));
    before.insert(subtree, "+io\n-io\n".into());
    assert_eq!(f.snapshot(), before, "the tree changed");
}

/// The directories of acme-web.slice, top-down.
const ACME_WEB: [&str; 2] = ["acme.slice", "acme.slice/acme-web.slice"];

#[test]
fn create_slice_on_a_systemd_host_goes_through_systemctl() {
    let args = ["bind", NQN_A, "1", "--slice", "acme-web.slice", "--create"];
    let f = Fixture::new();
    f.boot_with_systemd();
    let fake = FakeSystemctl::creating(&f, &ACME_WEB, "io\n");
    let (code, out, err) = f.run_with(&fake, &args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        fake.calls(),
        [
            "[set-property][--runtime][acme-web.slice][IOAccounting=yes]",
            "[start][acme-web.slice]",
        ]
    );
    let id = f.ino("acme.slice/acme-web.slice");
    assert_eq!(f.cgroup_id(NQN_A, 1), id);
    assert!(
        out.starts_with(&format!(
            "bound: {NQN_A} nsid 1 -> cgroup acme.slice/acme-web.slice (id {id})\n"
        )),
        "{out}"
    );
    // io on every level above the slice, by systemd (the fake writes
    // "io"); no "+io" from the CLI, which systemd would take back at its
    // next daemon-reload; nothing in the slice itself.
    assert_eq!(f.read("cgroup/cgroup.subtree_control"), "io\n");
    assert_eq!(f.read("cgroup/acme.slice/cgroup.subtree_control"), "io\n");
    assert_eq!(
        f.read("cgroup/acme.slice/acme-web.slice/cgroup.subtree_control"),
        ""
    );

    // It exists now: no systemctl.
    let (code, out, err) = f.run_with(&fake, &args);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("already bound: "), "{out}");
    assert_eq!(fake.calls().len(), 2);

    // Without RUNDIR/systemd/system the tool makes the directory itself
    // (one level: a fixture's mkdir, unlike cgroupfs's, makes no files).
    let f = Fixture::new();
    let fake = FakeSystemctl::creating(&f, &ACME_WEB[..1], "io\n");
    let (code, _, err) = f.run_with(
        &fake,
        &["bind", NQN_A, "1", "--slice", "acme.slice", "--create"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(fake.calls(), Vec::<String>::new());
    assert_eq!(f.cgroup_id(NQN_A, 1), f.ino("acme.slice"));
}

#[test]
fn failing_systemctl_changes_nothing() {
    let args = ["bind", NQN_A, "1", "--slice", "acme-web.slice", "--create"];
    let set =
        "systemctl set-property --runtime acme-web.slice IOAccounting=yes failed (exit status: 1)";
    let start = "systemctl start acme-web.slice failed (exit status: 1)";
    // (the call that fails, what it says on stderr, the calls made, the error).
    let cases = [
        (
            "set-property",
            "Failed to set unit properties on acme-web.slice: Access denied",
            1,
            format!("{set}: Failed to set unit properties on acme-web.slice: Access denied"),
        ),
        (
            "start",
            "Job for acme-web.slice failed.\n\
             See \"systemctl status acme-web.slice\" for details.",
            2,
            format!(
                "{start}: Job for acme-web.slice failed. \
                 See \"systemctl status acme-web.slice\" for details."
            ),
        ),
        (
            "start",
            "",
            2,
            "systemctl start acme-web.slice failed (exit status: 1, nothing on stderr)".into(),
        ),
    ];
    let all = [
        "[set-property][--runtime][acme-web.slice][IOAccounting=yes]",
        "[start][acme-web.slice]",
    ];
    for (verb, stderr, calls, want) in cases {
        let f = Fixture::new();
        f.boot_with_systemd();
        let fake = FakeSystemctl::failing(verb, stderr);
        let before = f.snapshot();
        let (code, out, err) = f.run_with(&fake, &args);
        assert_eq!(code, 1, "{verb}: {out}");
        assert_eq!(err, format!("nvmet-cgroup: error: {want}\n"), "{verb}");
        assert_eq!(fake.calls(), all[..calls], "{verb}");
        assert_eq!(f.snapshot(), before, "{verb}: the tree changed");
    }
}

#[test]
fn enabled_namespace_needs_reenable_and_the_module() {
    let f = Fixture::new();
    let before = f.snapshot();
    let (code, _, err) = f.run(&["bind", NQN_B, "1", "--cgroup", "tenant-a"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("is enabled") && err.contains("--reenable"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(f.snapshot(), before);

    let (code, _, err) = f.run(&["bind", NQN_B, "1", "--cgroup", "tenant-a", "--reenable"]);
    assert_ne!(code, 0);
    assert!(err.contains("load nvmet_cgroup"), "{err}");
    assert_eq!(f.snapshot(), before);

    f.load_module();
    f.ok(&["bind", NQN_B, "1", "--cgroup", "tenant-a", "--reenable"]);
    assert_eq!(f.cgroup_id(NQN_B, 1), f.ino("tenant-a"));
    assert_eq!(
        fs::read_to_string(f.ns(NQN_B, 1).join("enable")).unwrap(),
        "1\n"
    );

    let (code, _, err) = f.run(&["unbind", NQN_B, "1"]);
    assert_ne!(code, 0, "{err}");
    f.ok(&["unbind", NQN_B, "1", "--reenable"]);
    assert_eq!(f.cgroup_id(NQN_B, 1), 0);
}

#[test]
fn limit_partition_goes_to_whole_disk() {
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    let out = f.ok(&[
        "limit",
        NQN_A,
        "1",
        "--riops",
        "1K",
        "--wbps",
        "20M",
        "--weight",
        "300",
        "--latency",
        "5ms",
    ]);
    assert!(out.contains("8:16 (sdb)"), "{out}");
    assert_eq!(
        f.read("cgroup/tenant-a/io.max"),
        "8:16 wbps=20000000 riops=1000\n"
    );
    assert_eq!(last_line(&f.read("cgroup/tenant-a/io.weight")), "8:16 300");
    assert_eq!(f.read("cgroup/tenant-a/io.latency"), "8:16 target=5000\n");
    f.ok(&["limit", NQN_A, "1", "--riops", "max"]);
    assert_eq!(
        last_line(&f.read("cgroup/tenant-a/io.max")),
        "8:16 riops=max"
    );
    // systemd's word for no limit clears one too.
    f.ok(&["limit", NQN_A, "1", "--wbps", "infinity"]);
    assert_eq!(
        last_line(&f.read("cgroup/tenant-a/io.max")),
        "8:16 wbps=max"
    );
}

/// A kernel without io.latency (Debian's): io enabled, no io.latency file.
#[test]
fn latency_on_a_kernel_without_io_latency_is_refused_clearly() {
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    std::fs::remove_file(f.cg("tenant-a").join("io.latency")).unwrap();
    let before = f.snapshot();
    let (code, _, err) = f.run(&["limit", NQN_A, "1", "--riops", "1K", "--latency", "5ms"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("io.latency is not available on this kernel")
            && err.contains("CONFIG_BLK_CGROUP_IOLATENCY"),
        "{err}"
    );
    assert_eq!(f.snapshot(), before, "nothing may be written");
    f.ok(&["limit", NQN_A, "1", "--riops", "1K"]);
    assert_eq!(f.read("cgroup/tenant-a/io.max"), "8:16 riops=1000\n");
}

#[test]
fn limit_dm_goes_to_both_disks() {
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "2", "--cgroup", "tenant-a"]);
    let out = f.ok(&["limit", NQN_A, "2", "--rbps", "1G"]);
    assert!(out.contains("253:0"), "{out}");
    assert_eq!(
        f.read("cgroup/tenant-a/io.max"),
        "8:32 rbps=1000000000\n8:48 rbps=1000000000\n"
    );
}

#[test]
fn limit_loop_goes_to_the_backing_files_disk() {
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "3", "--cgroup", "tenant-a"]);
    f.ok(&["limit", NQN_A, "3", "--wiops", "500"]);
    assert_eq!(f.read("cgroup/tenant-a/io.max"), "8:64 wiops=500\n");
}

#[test]
fn file_namespace_uses_the_filesystems_device() {
    let f = Fixture::new();
    let img = f.p("srv/file-ns.img");
    fs::write(&img, "x").unwrap();
    let dev = fs::metadata(&img).unwrap().dev();
    let (maj, min) = (
        (((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)) as u32,
        ((dev & 0xff) | ((dev >> 12) & !0xff)) as u32,
    );
    let link = f.p("sys/dev/block").join(d((maj, min)));
    if link.exists() {
        eprintln!("skipped: the tempdir's device {maj}:{min} collides with the fixture");
        return;
    }
    let disk = f.p("sys/devices/virtual/block/tmpdisk");
    fs::create_dir_all(&disk).unwrap();
    fs::write(disk.join("dev"), format!("{maj}:{min}\n")).unwrap();
    std::os::unix::fs::symlink(&disk, &link).unwrap();
    f.make_ns(NQN_A, 7, &img, false, 0);
    f.ok(&["bind", NQN_A, "7", "--cgroup", "tenant-a"]);
    f.ok(&["limit", NQN_A, "7", "--riops", "7"]);
    assert_eq!(
        f.read("cgroup/tenant-a/io.max"),
        format!("{maj}:{min} riops=7\n")
    );
}

#[test]
fn status_json_shape() {
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    f.ok(&["limit", NQN_A, "1", "--riops", "1000"]);
    fs::write(
        f.cg("tenant-a/io.stat"),
        "8:16 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0 cost.usage=3\n",
    )
    .unwrap();
    let out = f.ok(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["version"], 1);
    let nss = v["namespaces"].as_array().unwrap();
    assert_eq!(nss.len(), 5);
    let ns = &nss[0];
    assert_eq!(ns["nqn"], NQN_A);
    assert_eq!(ns["nsid"], 1);
    assert_eq!(ns["enabled"], false);
    assert_eq!(ns["cgroup_id"], f.ino("tenant-a"));
    assert_eq!(ns["cgroup_state"], "bound");
    assert_eq!(ns["cgroup_path"], "tenant-a");
    assert_eq!(ns["top_device"], "8:17");
    assert_eq!(ns["device_error"], serde_json::Value::Null);
    assert_eq!(ns["devices"][0]["dev"], "8:16");
    assert_eq!(ns["devices"][0]["name"], "sdb");
    assert_eq!(ns["devices"][0]["limits"]["riops"], 1000);
    assert_eq!(ns["devices"][0]["limits"]["wiops"], serde_json::Value::Null);
    assert_eq!(ns["devices"][0]["stat"]["rbytes"], 4096);
    assert_eq!(ns["exec"], "module not loaded");
    // nsid 4: bound, device unresolvable; an unbound one has no limits.
    assert!(nss[3]["device_error"].as_str().unwrap().contains("8:200"));
    assert_eq!(nss[1]["cgroup_state"], "none");
    assert_eq!(nss[1]["devices"][0]["limits"], serde_json::Value::Null);

    f.load_module();
    let out = f.ok(&["status", NQN_A, "1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        v["namespaces"][0]["exec"]
            .as_str()
            .unwrap()
            .starts_with("unknown (no nvmet_cgroup status file"),
        "{out}"
    );
    let status = f.p("debug/nvmet_cgroup/namespaces");
    fs::create_dir_all(status.parent().unwrap()).unwrap();
    fs::write(
        &status,
        format!(
            "{NQN_A} 10 cgroup_id=5 mode=fast_path rw=transport\n\
             {NQN_A} 1 cgroup_id=7 mode=fast_path rw=context: io.cost enabled\n\n"
        ),
    )
    .unwrap();
    let out = f.ok(&["status", NQN_A, "1"]);
    assert!(
        out.contains("cgroup_id=7 mode=fast_path rw=context: io.cost enabled"),
        "{out}"
    );
    fs::write(&status, "\n").unwrap();
    let out = f.ok(&["status", NQN_A, "1"]);
    assert!(
        out.contains("not charged (not enabled with a cgroup)"),
        "{out}"
    );
    assert!(out.contains("8:17 -> 8:16"), "{out}");
    assert!(out.contains("default"), "{out}");
    println!("{out}");
    // A stale id.
    fs::write(f.ns(NQN_A, 2).join("cgroup_id"), "999999999\n").unwrap();
    let out = f.ok(&["status", NQN_A, "2"]);
    assert!(out.contains("not found (stale id?)"), "{out}");
}

#[test]
fn save_then_restore_after_reboot() {
    let f = Fixture::new();
    fs::write(f.ns(NQN_A, 4).join("cgroup_id"), "0\n").unwrap();
    f.load_module();
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    f.ok(&["limit", NQN_A, "1", "--riops", "1K", "--latency", "2ms"]);
    f.ok(&["bind", NQN_A, "2", "--slice", "tenants-b.slice"]);
    f.ok(&["limit", NQN_A, "2", "--wbps", "10M"]);
    f.ok(&["bind", NQN_B, "1", "--cgroup", "tenant-a", "--reenable"]);
    let file = f.p("etc/nvmet/cgroup.json");
    let file = file.to_str().unwrap();
    f.ok(&["save", file]);
    let saved: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(saved["version"], 1);
    let recs = saved["namespaces"].as_array().unwrap();
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[0]["cgroup"], "tenant-a");
    assert_eq!(
        recs[0]["devices"][0]["path"],
        "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"
    );
    assert_eq!(recs[0]["devices"][0]["riops"], 1000);
    assert_eq!(recs[0]["devices"][0]["latency_us"], 2000);
    assert_eq!(recs[1]["cgroup"], "tenants.slice/tenants-b.slice");
    assert_eq!(recs[1]["slice"], "tenants-b.slice");
    assert_eq!(recs[1]["devices"][0]["path"], "/dev/sdc");
    assert_eq!(recs[1]["devices"][1]["path"], "/dev/sdd");
    // The same disk in the same cgroup: the same limits.
    assert_eq!(recs[2]["devices"], recs[0]["devices"]);
    let text = fs::read_to_string(file).unwrap();
    assert!(!text.contains("8:16") && !text.contains("8:32"), "{text}");

    // "Reboot": new cgroup inodes (the old directories are kept aside so
    // their numbers can't be reused), new device numbers, cgroup_id 0.
    let old_a = f.ino("tenant-a");
    fs::create_dir_all(f.p("old")).unwrap();
    fs::rename(f.cg("tenants.slice"), f.p("old/tenants.slice")).unwrap();
    fs::rename(f.cg("tenant-a"), f.p("old/tenant-a")).unwrap();
    f.make_cgroup("tenants.slice", "io\n");
    f.make_cgroup("tenants.slice/tenants-b.slice", "io\n");
    f.make_cgroup("tenant-a", "io\n");
    fs::write(f.cg("cgroup.subtree_control"), "").unwrap();
    f.remove_devices();
    f.make_devices(&BOOT2);
    let dev = f.p("dev");
    f.make_ns(NQN_A, 1, &dev.join("sdb1"), false, 0);
    f.make_ns(NQN_A, 2, &dev.join("dm-0"), false, 0);
    f.make_ns(NQN_B, 1, &dev.join("sdb"), true, 0);
    assert_ne!(f.ino("tenant-a"), old_a);

    let out = f.ok(&["restore", file]);
    assert!(out.contains("restored 3"), "{out}");
    assert_eq!(f.cgroup_id(NQN_A, 1), f.ino("tenant-a"));
    assert_eq!(f.cgroup_id(NQN_B, 1), f.ino("tenant-a"));
    assert_eq!(
        f.cgroup_id(NQN_A, 2),
        f.ino("tenants.slice/tenants-b.slice")
    );
    assert_eq!(
        fs::read_to_string(f.ns(NQN_B, 1).join("enable")).unwrap(),
        "1\n"
    );
    assert_eq!(f.read("cgroup/cgroup.subtree_control"), "+io\n");
    assert_eq!(
        f.read("cgroup/tenant-a/io.max"),
        format!("{} riops=1000\n", d(BOOT2.sdb))
    );
    assert_eq!(
        f.read("cgroup/tenant-a/io.latency"),
        format!("{} target=2000\n", d(BOOT2.sdb))
    );
    assert_eq!(
        f.read("cgroup/tenants.slice/tenants-b.slice/io.max"),
        format!(
            "{} wbps=10000000\n{} wbps=10000000\n",
            d(BOOT2.sdc),
            d(BOOT2.sdd)
        )
    );

    // Again: nothing changes.
    let before = f.snapshot();
    let out = f.ok(&["restore", file]);
    assert_eq!(out.matches("unchanged").count(), 3, "{out}");
    assert_eq!(f.snapshot(), before);
    let _ = BOOT1;
}

#[test]
fn save_keeps_a_backup_and_wont_replace_records_with_nothing() {
    let f = Fixture::new();
    // No namespace bound (nsid 4 is bound in the fixture).
    fs::write(f.ns(NQN_A, 4).join("cgroup_id"), "0\n").unwrap();
    let file = f.p("etc/nvmet/cgroup.json");
    let bak = f.p("etc/nvmet/cgroup.json.bak");
    let arg = file.to_str().unwrap();
    let records = |p: &std::path::Path| -> usize {
        let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap();
        v["namespaces"].as_array().unwrap().len()
    };

    // A first save: nothing to keep.
    let out = f.ok(&["save", arg]);
    assert!(!out.contains(".bak"), "{out}");
    assert!(!bak.exists());
    assert_eq!(records(&file), 0);
    // Empty over empty is fine; the old file is kept all the same.
    let empty = fs::read_to_string(&file).unwrap();
    let out = f.ok(&["save", arg]);
    assert!(
        out.contains(&format!("kept the previous file as {}", bak.display())),
        "{out}"
    );
    assert_eq!(fs::read_to_string(&bak).unwrap(), empty);

    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    f.ok(&["save", arg]);
    assert_eq!(records(&file), 1);
    assert_eq!(fs::read_to_string(&bak).unwrap(), empty);
    let one = fs::read_to_string(&file).unwrap();

    // Everything unbound: saving would lose the record.
    f.ok(&["unbind", NQN_A, "1"]);
    let before = f.snapshot();
    let (code, out, err) = f.run(&["save", arg]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        err,
        format!(
            "nvmet-cgroup: error: no namespace is bound to a cgroup: not replacing {arg} \
             (1 namespace(s)) with an empty configuration (use --force to)\n"
        )
    );
    assert_eq!(f.snapshot(), before, "the refused save changed something");

    // --force: replaced, the record kept in the .bak.
    f.ok(&["save", arg, "--force"]);
    assert_eq!(records(&file), 0);
    assert_eq!(fs::read_to_string(&bak).unwrap(), one);

    // A file that is not a save file is not known to be empty.
    fs::write(&file, "hand-written notes\n").unwrap();
    let before = f.snapshot();
    let (code, _, err) = f.run(&["save", arg]);
    assert_eq!(code, 1);
    assert!(err.contains("content that is not a save file"), "{err}");
    assert_eq!(f.snapshot(), before);
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    f.ok(&["save", arg]);
    assert_eq!(records(&file), 1);
    assert_eq!(fs::read_to_string(&bak).unwrap(), "hand-written notes\n");
}

#[test]
fn restore_reports_missing_namespace_and_continues() {
    let f = Fixture::new();
    let file = f.p("cg.json");
    let text = format!(
        r#"{{"version":1,"namespaces":[
        {{"nqn":"nqn.gone","nsid":1,"cgroup":"tenant-a","device_path":"/x"}},
        {{"nqn":"{NQN_A}","nsid":1,"cgroup":"tenant-c","device_path":"/x"}}]}}"#
    );
    fs::write(&file, text).unwrap();
    let (code, _, err) = f.run(&["restore", file.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("nqn.gone nsid 1: no subsystem"), "{err}");
    assert!(err.contains("1 of 2 record(s)"), "{err}");
    assert!(f.cg("tenant-c").is_dir());
    assert_eq!(f.cgroup_id(NQN_A, 1), f.ino("tenant-c"));
}

#[test]
fn bad_inputs_change_nothing() {
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    fs::write(f.p("bad.json"), "{\"version\":1,\"namespaces\":[").unwrap();
    fs::write(f.p("v2.json"), "{\"version\":2,\"namespaces\":[]}").unwrap();
    let bad = f.p("bad.json").display().to_string();
    let v2 = f.p("v2.json").display().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["bind", "nqn.nope", "1", "--cgroup", "tenant-a"],
            "no subsystem nqn.nope",
        ),
        (
            vec!["bind", NQN_A, "9", "--cgroup", "tenant-a"],
            "has no namespace 9",
        ),
        (
            vec!["bind", NQN_A, "2", "--cgroup", "notacg"],
            "is not a cgroup",
        ),
        (
            vec!["bind", NQN_A, "2", "--cgroup", "notacg/x", "--create"],
            "is not a cgroup",
        ),
        (
            vec!["bind", NQN_A, "2", "--cgroup", "noio/child"],
            "io controller not available at",
        ),
        (
            vec!["bind", NQN_A, "2", "--cgroup", "absent"],
            "use --create",
        ),
        (vec!["bind", NQN_A, "2", "--cgroup", "../etc"], "\"..\""),
        (
            vec!["bind", NQN_A, "2", "--slice", "a--b.slice", "--create"],
            "invalid slice name",
        ),
        (vec!["bind", NQN_A, "2"], "required"),
        (vec!["bind", NQN_A, "0", "--cgroup", "tenant-a"], "0"),
        (vec!["limit", NQN_A, "1", "--riops", "0.4"], "at least 1"),
        (vec!["limit", NQN_A, "1", "--wbps", "1,5K"], "not a number"),
        (vec!["limit", NQN_A, "1", "--rbps", "10X"], "not a number"),
        (vec!["limit", NQN_A, "1", "--rbps", ""], "not a number"),
        (vec!["limit", NQN_A, "1", "--riops", "5G"], "too large"),
        (vec!["limit", NQN_A, "1", "--rbps", "-1"], "not a number"),
        (vec!["limit", NQN_A, "1", "--wiops", "10x"], "not a number"),
        (vec!["limit", NQN_A, "1", "--latency", "5"], "unit"),
        (vec!["limit", NQN_A, "1", "--weight", "0"], "1 to 10000"),
        (vec!["limit", NQN_A, "1"], "required"),
        (vec!["limit", NQN_A, "2", "--riops", "10"], "not bound"),
        (
            vec!["limit", NQN_A, "4", "--riops", "10"],
            "cannot resolve device 8:200",
        ),
        (vec!["restore", &bad], "malformed JSON"),
        (vec!["restore", &v2], "unsupported version 2"),
        (vec!["status", "nqn.nope"], "no subsystem"),
    ];
    for (args, want) in cases {
        let before = f.snapshot();
        let (code, out, err) = f.run(&args);
        assert_ne!(code, 0, "{args:?} succeeded: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("nvmet-cgroup: error: "), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
        assert_eq!(f.snapshot(), before, "{args:?} changed the tree");
    }
}

#[test]
fn man_page_and_help() {
    let f = Fixture::new();
    let man = f.ok(&["man"]);
    assert!(man.contains(".TH nvmet-cgroup 8"), "{man}");
    // What man(1) shows: rendered with groff's warnings on, none printed.
    let page = f.p("nvmet-cgroup.8");
    fs::write(&page, &man).unwrap();
    let o = std::process::Command::new("man")
        .args(["--warnings", "-l"])
        .arg(&page)
        .env("MANWIDTH", "80")
        .env("MAN_KEEP_FORMATTING", "0")
        .output()
        .expect("man(1) (Debian's man-db; scripts/deps installs it)");
    // Without a terminal, man marks bold and underline by overstriking
    // (X BACKSPACE X): keep the last character of each.
    let mut text = String::new();
    for c in String::from_utf8_lossy(&o.stdout).chars() {
        if c == '\u{8}' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.is_empty(), "man -l: {err}");
    // Every section man-pages(7) asks of a command, each subcommand with its
    // own options, and no reference to per-subcommand pages that do not
    // exist.
    for want in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "COMMANDS",
        "FILES",
        "EXIT STATUS",
        "EXAMPLES",
        "SEE ALSO",
    ] {
        assert!(
            text.lines().any(|l| l == want),
            "section {want} missing: {text}"
        );
    }
    for sub in ["bind", "unbind", "limit", "status", "save", "restore"] {
        assert!(
            text.lines().any(|l| l.trim() == sub),
            "subcommand {sub} missing"
        );
        assert!(
            text.contains(&format!("nvmet-cgroup {sub} ")),
            "{sub}'s synopsis missing"
        );
    }
    for opt in [
        "--cgroup PATH",
        "--slice NAME.slice",
        "--create",
        "--reenable",
        "--riops V",
        "--latency T",
        "--json",
        "--force",
        "--no-reenable",
        "/etc/nvmet/cgroup.json",
    ] {
        assert!(text.contains(opt), "{opt} missing: {text}");
    }
    assert!(!text.contains("nvmet-cgroup-bind"), "{text}");
    assert!(!man.contains("--configfs"), "hidden options in the page");

    // Passthru subsystems: how they are named, and that io.max is refused.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "the word passthru in place of the NSID",
        "io.max does not apply to passthru subsystems (passthrough requests bypass blk-throttle)",
        "/sys/kernel/config/nvmet/subsystems/NQN/passthru/cgroup_id",
        "nvmet-cgroup limit nqn.2014-08.org.example:pt passthru --weight 300",
    ] {
        assert!(flat.contains(want), "{want:?} not in the page");
    }

    let help = f.ok(&["limit", "--help"]);
    for want in ["base of 1000", "20K is 20000", "infinity", "1.5K is 1500"] {
        assert!(help.contains(want), "{want:?} not in {help}");
        assert!(
            text.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains(want),
            "{want:?} not in the page"
        );
    }
}

/// `status` and `save` read each cgroup and each namespace once: 300
/// namespaces bound among 2047 cgroups take well under half a second (the
/// per-namespace walk of the cgroup tree took 6.2 s here).
#[test]
fn status_and_save_scale_with_namespaces_plus_cgroups() {
    const CGROUPS: usize = 2047;
    const NAMESPACES: u32 = 300;
    let f = Fixture::new();
    f.load_module();
    for i in 0..CGROUPS {
        f.make_cgroup(&format!("scale/g{i:04}"), "io\n");
    }
    let sdb = f.p("dev/sdb");
    let nqn = "nqn.2014-08.org.example:scale";
    let mut status = String::new();
    for n in 1..=NAMESPACES {
        let cg = format!("scale/g{:04}", (n as usize * 7) % CGROUPS);
        let id = f.ino(&cg);
        f.make_ns(nqn, n, &sdb, true, id);
        status.push_str(&format!(
            "{nqn} {n} cgroup_id={id} mode=context rw=context\n"
        ));
    }
    fs::create_dir_all(f.p("debug/nvmet_cgroup")).unwrap();
    fs::write(f.p("debug/nvmet_cgroup/namespaces"), status).unwrap();
    // One limit, so that save has a device to record for every namespace.
    for n in 1..=NAMESPACES {
        let cg = format!("scale/g{:04}", (n as usize * 7) % CGROUPS);
        fs::write(
            f.cg(&cg).join("io.max"),
            format!("{} riops=100\n", d(BOOT1.sdb)),
        )
        .unwrap();
    }

    let t = std::time::Instant::now();
    let out = f.ok(&["status", "--json", nqn]);
    let status_time = t.elapsed();
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let nss = doc["namespaces"].as_array().unwrap();
    assert_eq!(nss.len(), NAMESPACES as usize);
    let last = &nss[NAMESPACES as usize - 1];
    assert_eq!(last["cgroup_state"], "bound");
    assert_eq!(
        last["cgroup_path"],
        format!("scale/g{:04}", (NAMESPACES as usize * 7) % CGROUPS)
    );
    assert_eq!(
        last["exec"],
        "cgroup_id=".to_string() + &last["cgroup_id"].to_string() + " mode=context rw=context"
    );

    // The standard fixture's namespace NQN_A 4 is bound but its device is
    // gone, which save refuses: unbind it.
    fs::write(f.ns(NQN_A, 4).join("cgroup_id"), "0\n").unwrap();
    let file = f.p("etc/cgroup.json");
    let t = std::time::Instant::now();
    f.ok(&["save", file.to_str().unwrap()]);
    let save_time = t.elapsed();
    let saved: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        saved["namespaces"].as_array().unwrap().len(),
        NAMESPACES as usize
    );
    eprintln!(
        "{NAMESPACES} namespaces x {CGROUPS} cgroups: status {status_time:?}, save {save_time:?}"
    );
    assert!(
        status_time.as_secs_f64() < 0.5,
        "status took {status_time:?}"
    );
    assert!(save_time.as_secs_f64() < 0.5, "save took {save_time:?}");
}

/// Output that cannot be written (a full disk) fails the command; a reader
/// that goes away early does not.
#[test]
fn write_errors_fail() {
    let f = Fixture::new();
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = f.cmd().arg("status").stdout(full).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: writing to standard output") && err.contains("No space left"),
        "{err}"
    );

    // A closed pipe: status exits 0 without a message.
    let mut child = f
        .cmd()
        .arg("status")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// save records how each namespace's device reaches its disks; restore
/// refuses, writing nothing for it, a namespace whose dm device was rebuilt
/// over another disk or whose device_path changed, and restores the rest.
#[test]
fn restore_refuses_a_changed_device_stack() {
    let f = Fixture::new();
    fs::write(f.ns(NQN_A, 4).join("cgroup_id"), "0\n").unwrap();
    f.load_module();
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    f.ok(&["limit", NQN_A, "1", "--riops", "1K"]);
    f.ok(&["bind", NQN_A, "2", "--slice", "tenants-b.slice"]);
    f.ok(&["limit", NQN_A, "2", "--wbps", "10M"]);
    f.ok(&["bind", NQN_A, "3", "--cgroup", "tenant-a"]);
    let file = f.p("etc/cgroup.json");
    let file = file.to_str().unwrap();
    f.ok(&["save", file]);
    let saved: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(file).unwrap()).unwrap();
    let recs = saved["namespaces"].as_array().unwrap();
    let backing = f.p("srv/backing.img").display().to_string();
    assert_eq!(
        recs[0]["stack"],
        serde_json::json!(["partition 1 > disk wwid=naa.5000c500a1b2c3d4"])
    );
    assert_eq!(
        recs[1]["stack"],
        serde_json::json!([
            "dm uuid=LVM-vg0a > disk name=sdd",
            "dm uuid=LVM-vg0a > disk serial=SERIAL-C"
        ])
    );
    assert_eq!(
        recs[2]["stack"],
        serde_json::json!([format!("loop file={backing} > disk name=sde")])
    );

    // The next boot: nothing bound, no limits; dm-0 (same UUID) now over
    // sde, and namespace 3's loop device over another file.
    for (nqn, n) in [(NQN_A, 1), (NQN_A, 2), (NQN_A, 3)] {
        fs::write(f.ns(nqn, n).join("cgroup_id"), "0\n").unwrap();
    }
    for cg in ["tenant-a", "tenants.slice/tenants-b.slice"] {
        fs::write(f.cg(cg).join("io.max"), "").unwrap();
    }
    let dm = f.p("sys/devices/virtual/block/dm-0/slaves");
    fs::remove_dir_all(&dm).unwrap();
    fs::create_dir_all(&dm).unwrap();
    std::os::unix::fs::symlink(f.p("sys/devices/virtual/block/sde"), dm.join("sde")).unwrap();
    fs::write(
        f.p("sys/devices/virtual/block/loop0/loop/backing_file"),
        format!("{}\n", f.p("srv/backing.img").display()).replace("backing.img", "other.img"),
    )
    .unwrap();
    let mut map: serde_json::Value = serde_json::from_str(&f.read("devmap.json")).unwrap();
    map[f.p("srv/other.img").display().to_string()] = serde_json::json!({ "file": d(BOOT1.sde) });
    fs::write(f.p("srv/other.img"), "").unwrap();
    fs::write(f.p("devmap.json"), map.to_string()).unwrap();
    let before = f.snapshot();

    let (code, out, err) = f.run(&["restore", file]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(&format!("{NQN_A} nsid 1: cgroup tenant-a")),
        "{out}"
    );
    assert!(
        err.contains(&format!("{NQN_A} nsid 2: the device stack under"))
            && err.contains("saved: dm uuid=LVM-vg0a > disk name=sdd; dm uuid=LVM-vg0a > disk serial=SERIAL-C; now: dm uuid=LVM-vg0a > disk name=sde")
            && err.contains("nothing restored for it"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{NQN_A} nsid 3: the device stack")),
        "{err}"
    );
    assert!(err.contains("2 of 3 record(s)"), "{err}");
    // Namespace 1 restored; nothing at all written for 2 and 3.
    assert_eq!(f.cgroup_id(NQN_A, 1), f.ino("tenant-a"));
    let changed = f.changed_since(&before);
    assert_eq!(
        changed,
        [
            "cgroup/tenant-a/io.max",
            &format!("configfs/subsystems/{NQN_A}/namespaces/1/cgroup_id")
        ],
        "{out}"
    );
    assert_eq!(f.cgroup_id(NQN_A, 2), 0);
    assert_eq!(f.read("cgroup/tenants.slice/tenants-b.slice/io.max"), "");

    // A device_path that changed is refused the same way.
    fs::write(f.ns(NQN_A, 1).join("cgroup_id"), "0\n").unwrap();
    fs::write(
        f.ns(NQN_A, 1).join("device_path"),
        format!("{}\n", f.p("dev/sdb").display()),
    )
    .unwrap();
    let (code, _, err) = f.run(&["restore", file]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("{NQN_A} nsid 1: its device_path is now")),
        "{err}"
    );
    assert_eq!(f.cgroup_id(NQN_A, 1), 0);
}

/// io.max is per disk: status says what a limit on a namespace striped over
/// two disks caps in all.
#[test]
fn status_warns_about_limits_spread_over_disks() {
    let f = Fixture::new();
    f.ok(&["bind", NQN_A, "2", "--cgroup", "tenant-a"]);
    f.ok(&["limit", NQN_A, "2", "--riops", "1K", "--rbps", "5M"]);
    let out = f.ok(&["status", NQN_A, "2"]);
    assert!(
        out.contains(
            "warning      io.max limits apply per disk and this namespace spans 2 disks (8:32 8:48): its I/O is capped at riops 2000, rbps 10.0 MB/s in all"
        ),
        "{out}"
    );
    assert!(out.contains("5.0 MB/s"), "{out}");
    let json = f.ok(&["status", "--json", NQN_A, "2"]);
    assert!(json.contains("spans 2 disks"), "{json}");
    // One disk: no warning.
    f.ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    f.ok(&["limit", NQN_A, "1", "--riops", "1K"]);
    assert!(!f.ok(&["status", NQN_A, "1"]).contains("warning"));
}

/// On a systemd host, a slice's limits go through `systemctl set-property
/// --runtime` (systemd owns the slice's io files and would undo a direct
/// write at its next daemon-reload), and the CLI succeeds only once the
/// kernel's files show them.
#[test]
fn limit_on_a_systemd_slice_goes_through_systemctl() {
    let f = Fixture::new();
    f.boot_with_systemd();
    for d in ["", "tenants.slice"] {
        fs::write(f.cg(d).join("cgroup.subtree_control"), "io\n").unwrap();
    }
    let b = "tenants.slice/tenants-b.slice";
    let io_max = f.cg(b).join("io.max").display().to_string();
    // systemd realizing the unit: the io.max lines for its two disks.
    let script = format!(
        "[ \"$1\" = set-property ] || exit 0\n\
         printf '{} riops=1000\\n{} riops=1000\\n' >> '{io_max}'",
        d(BOOT1.sdc),
        d(BOOT1.sdd)
    );
    let fake = FakeSystemctl::new(&script);
    let (code, _, err) = f.run_with(&fake, &["bind", NQN_A, "2", "--slice", "tenants-b.slice"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(fake.calls(), Vec::<String>::new(), "io is on already");
    let (code, out, err) = f.run_with(&fake, &["limit", NQN_A, "2", "--riops", "1K"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        fake.calls(),
        ["[set-property][--runtime][tenants-b.slice][IOReadIOPSMax=/dev/sdc 1000][IOReadIOPSMax=/dev/sdd 1000]"]
    );
    assert!(
        out.contains("tenants-b.slice IOReadIOPSMax=/dev/sdc 1000"),
        "{out}"
    );

    // A property systemd accepts but that never reaches the kernel (another
    // unit's setting wins, say): an error, not a tenant silently unlimited.
    let (code, _, err) = f.run_with(&fake, &["limit", NQN_A, "2", "--wiops", "2K"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("systemd accepted the properties of tenants-b.slice")
            && err.contains("still does not show them"),
        "{err}"
    );
    // io.max itself was never written by the CLI: only the fake's lines.
    assert_eq!(f.read(&format!("cgroup/{b}/io.max")).lines().count(), 4);
    assert!(!f.read(&format!("cgroup/{b}/io.max")).contains("wiops"));

    // What systemd cannot do per device is refused before anything runs.
    let (code, _, err) = f.run_with(&fake, &["limit", NQN_A, "2", "--weight", "default"]);
    assert_eq!(code, 1);
    assert!(err.contains("IODeviceWeight="), "{err}");
    assert_eq!(fake.calls().len(), 2);
}

/// On a systemd host, a cgroup outside any slice is bound, with a warning
/// that systemd may take its +io back.
#[test]
fn bind_outside_a_slice_on_a_systemd_host_warns() {
    let f = Fixture::new();
    f.boot_with_systemd();
    let (code, out, err) = f.run(&["bind", NQN_A, "1", "--cgroup", "tenant-a"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "warning: systemd manages this host's cgroup tree, and tenant-a is not a slice"
        ),
        "{out}"
    );
    // A slice whose parents have io (systemd enabled it): no systemctl
    // call, no warning.
    fs::write(f.cg("tenants.slice/cgroup.subtree_control"), "io\n").unwrap();
    let out = f.ok(&[
        "bind",
        NQN_A,
        "2",
        "--cgroup",
        "tenants.slice/tenants-b.slice",
    ]);
    assert!(!out.contains("warning"), "{out}");
    // Without systemd: no warning.
    let f = Fixture::new();
    assert!(!f
        .ok(&["bind", NQN_A, "1", "--cgroup", "tenant-a"])
        .contains("warning"));
}
