// SPDX-License-Identifier: GPL-2.0

//! The `cgroup_id` namespace attribute: parsing, show, store, and the table of
//! configured IDs.

use crate::nvmet::Ns;
use kernel::prelude::*;

/// Parses like `kstrtou64(s, 0, ...)`: decimal, `0x` hexadecimal or `0` octal,
/// an optional leading `+` and one trailing newline.
pub(crate) fn parse(input: &[u8]) -> Result<u64> {
    let mut s = input.strip_prefix(b"+").unwrap_or(input);
    let radix: u64 = match s {
        [b'0', x, d, ..] if x.eq_ignore_ascii_case(&b'x') && d.is_ascii_hexdigit() => {
            s = &s[2..];
            16
        }
        [b'0', ..] => 8,
        _ => 10,
    };

    let mut value: u64 = 0;
    let mut digits = 0;
    let mut overflow = false;
    for &c in s {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => break,
        };
        if u64::from(d) >= radix {
            break;
        }
        match value
            .checked_mul(radix)
            .and_then(|v| v.checked_add(u64::from(d)))
        {
            Some(v) => value = v,
            None => overflow = true,
        }
        digits += 1;
    }
    if overflow {
        return Err(ERANGE);
    }
    match &s[digits..] {
        _ if digits == 0 => Err(EINVAL),
        b"" | b"\n" => Ok(value),
        _ => Err(EINVAL),
    }
}

/// Formats `value` as `"%llu\n"` into `page`; returns the length.
fn format(value: u64, page: &mut [u8]) -> Result<usize> {
    let mut digits = [0u8; 20];
    let mut n = 0;
    let mut v = value;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let out = page.get_mut(..n + 1).ok_or(EINVAL)?;
    for (o, d) in out.iter_mut().zip(digits[..n].iter().rev()) {
        *o = *d;
    }
    out[n] = b'\n';
    Ok(n + 1)
}

/// The configured cgroup ID of a namespace; 0 if none.
pub(crate) fn get(ns: &Ns) -> u64 {
    let state = crate::STATE.lock();
    state
        .cgroup_ids
        .iter()
        .find(|(key, _)| *key == ns.key())
        .map_or(0, |(_, id)| *id)
}

/// Shows the namespace's cgroup ID.  Called with the subsystem's lock held.
pub(crate) fn show(ns: &Ns, page: &mut [u8]) -> Result<usize> {
    format(get(ns), page)
}

/// Sets (or with 0 clears) the namespace's cgroup ID.  Called with the
/// subsystem's lock held, so the namespace cannot be enabled meanwhile.
pub(crate) fn store(ns: &Ns, input: &[u8]) -> Result {
    // configfs passes the bytes written; stop at a NUL like a C string would.
    let input = input.split(|&c| c == 0).next().unwrap_or(input);
    let id = parse(input).inspect_err(|e| {
        pr_err!(
            "nsid {}: invalid cgroup_id (error {})\n",
            ns.nsid(),
            e.to_errno()
        );
    })?;
    if ns.enabled() {
        pr_err!(
            "nsid {}: disable the namespace to change cgroup_id\n",
            ns.nsid()
        );
        return Err(EBUSY);
    }

    let mut state = crate::STATE.lock();
    let ids = &mut state.cgroup_ids;
    let pos = ids.iter().position(|(key, _)| *key == ns.key());
    match (pos, id) {
        (Some(i), 0) => {
            ids.remove(i)?;
        }
        (Some(i), id) => ids[i].1 = id,
        (None, 0) => {}
        (None, id) => ids.push((ns.key(), id), GFP_KERNEL)?,
    }
    Ok(())
}

/// Forgets a namespace that is being freed.
pub(crate) fn forget(ns: &Ns) {
    let mut state = crate::STATE.lock();
    let ids = &mut state.cgroup_ids;
    if let Some(i) = ids.iter().position(|(key, _)| *key == ns.key()) {
        let _ = ids.remove(i);
    }
}

#[kunit_tests(nvmet_cgroup_id)]
mod tests {
    use super::*;
    use crate::ffi::raw;
    use kernel::error::to_result;

    /// What the kernel's own `kstrtou64(s, 0, ...)` returns.
    fn kstrtou64(s: &CStr) -> Result<u64> {
        let mut v = 0;
        // SAFETY: `s` is NUL-terminated and `v` is writable.
        to_result(unsafe { raw::nvmet_cgroup_kstrtou64(s.as_char_ptr(), &mut v) })?;
        Ok(v)
    }

    const CASES: &[(&CStr, Result<u64>)] = &[
        (c"12", Ok(12)),
        (c"0x1f", Ok(31)),
        (c"0X1F", Ok(31)),
        (c"017", Ok(15)),
        (c"0", Ok(0)),
        (c"12\n", Ok(12)),
        (c"+5", Ok(5)),
        (c"18446744073709551615", Ok(u64::MAX)),
        (c"0xffffffffffffffff", Ok(u64::MAX)),
        (c"", Err(EINVAL)),
        (c"\n", Err(EINVAL)),
        (c"abc", Err(EINVAL)),
        (c"-1", Err(EINVAL)),
        (c"1 2", Err(EINVAL)),
        (c" 1", Err(EINVAL)),
        (c"12\n\n", Err(EINVAL)),
        (c"0x", Err(EINVAL)),
        (c"0x1g", Err(EINVAL)),
        (c"08", Err(EINVAL)),
        (c"18446744073709551616", Err(ERANGE)),
        (c"0x10000000000000000", Err(ERANGE)),
        (c"99999999999999999999x", Err(ERANGE)),
    ];

    #[test]
    fn parse_accepts_and_rejects_like_v12() {
        for (input, expected) in CASES {
            assert_eq!(parse(input.to_bytes()), *expected);
        }
    }

    #[test]
    fn parse_matches_kstrtou64() {
        for (input, _) in CASES {
            assert_eq!(parse(input.to_bytes()), kstrtou64(input));
        }
    }

    #[test]
    fn format_is_decimal_with_newline() {
        let mut page = [0u8; 32];
        assert_eq!(format(0, &mut page), Ok(2));
        assert_eq!(&page[..2], b"0\n");
        assert_eq!(format(u64::MAX, &mut page), Ok(21));
        assert_eq!(&page[..21], b"18446744073709551615\n");
        assert_eq!(format(12, &mut page[..2]), Err(EINVAL));
    }
}
