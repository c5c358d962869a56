// SPDX-License-Identifier: GPL-2.0
//! The hidden `--dev-map` of debug builds: device numbers for paths from a
//! JSON table, because a test fixture can't make device nodes or choose a
//! file's `st_dev`.  Not compiled into release builds.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::device::DevLookup;
use crate::devnum::{stat_node, Node};
use crate::sysio;

#[derive(Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
enum NodeSpec {
    Block(String),
    File(String),
    Char(String),
}

/// A table of paths (canonicalised where they exist) and what they are,
/// read from a JSON object `{"PATH": {"block": "8:16"} | {"file": "8:1"} |
/// {"char": "241:0"}}`;
/// paths not in it are stat'ed.
pub struct MapLookup {
    map: HashMap<PathBuf, Node>,
}

fn canon(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

impl MapLookup {
    pub fn load(file: &Path) -> Result<MapLookup> {
        let text = sysio::read(file)?;
        let raw: HashMap<String, NodeSpec> = serde_json::from_str(&text)
            .with_context(|| format!("parsing device map {}", file.display()))?;
        let mut map = HashMap::new();
        for (k, v) in raw {
            let node = match v {
                NodeSpec::Block(d) => Node::Block(d.parse()?),
                NodeSpec::File(d) => Node::File(d.parse()?),
                NodeSpec::Char(d) => Node::Char(d.parse()?),
            };
            map.insert(canon(Path::new(&k)), node);
        }
        Ok(MapLookup { map })
    }
}

impl DevLookup for MapLookup {
    fn lookup(&self, path: &Path) -> Result<Node> {
        match self.map.get(&canon(path)) {
            Some(n) => Ok(*n),
            None => stat_node(path),
        }
    }
}
