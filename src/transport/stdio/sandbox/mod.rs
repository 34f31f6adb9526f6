#![allow(dead_code)]

pub(crate) mod proxy;
