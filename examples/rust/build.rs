//! Find libsive for linking.
//!
//! 1. SIVE_LIB_DIR, when set: a directory holding libsive.so (the meson tests
//!    point it at the build tree, which must win over any installed copy);
//! 2. otherwise `pkg-config --libs libsive`, which honours PKG_CONFIG_PATH
//!    (and PKG_CONFIG_SYSROOT_DIR) for a copy installed in a prefix.
//!
//! Each directory also goes into the rpath, so that examples and tests run
//! without LD_LIBRARY_PATH.
use std::env;
use std::process::Command;

fn link_dir(dir: &str) {
    println!("cargo:rustc-link-search=native={dir}");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
}

fn main() {
    for var in [
        "SIVE_LIB_DIR",
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_SYSROOT_DIR",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    if let Ok(dir) = env::var("SIVE_LIB_DIR") {
        link_dir(&dir);
        println!("cargo:rustc-link-lib=dylib=sive");
        return;
    }
    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(&pkg_config)
        .args(["--libs", "libsive"])
        .output();
    match out {
        Ok(out) if out.status.success() => {
            for flag in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                if let Some(dir) = flag.strip_prefix("-L") {
                    link_dir(dir);
                } else if let Some(lib) = flag.strip_prefix("-l") {
                    println!("cargo:rustc-link-lib=dylib={lib}");
                }
            }
        }
        Ok(out) => panic!(
            "`{pkg_config} --libs libsive` failed: {}\nset PKG_CONFIG_PATH to the directory of \
             libsive.pc, or SIVE_LIB_DIR to the directory of libsive.so",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => {
            panic!("cannot run {pkg_config} ({e}): set SIVE_LIB_DIR to the directory of libsive.so")
        }
    }
}
