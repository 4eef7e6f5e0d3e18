//! lab02's plumbing, beside `main.rs`: [`lanes`], the escape loop on the CPU's vector lanes.

pub mod lanes;
