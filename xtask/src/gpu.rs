//! Is there a GPU the labs can use, and how many? Asked once per command, the way the labs
//! ask.

/// The GPU's name, or why there is none (the first sentence of the labs' own message).
pub fn probe() -> Result<String, String> {
    match shared::gpu::Gpu::open() {
        Ok(gpu) => Ok(gpu.name),
        Err(e) => {
            let message = e.to_string();
            let first = message.split(". ").next().unwrap_or(&message).to_string();
            Err(first)
        }
    }
}

/// How many GPUs the labs can see: 0 where none opens.
pub fn count() -> usize {
    shared::gpu::device_count().unwrap_or(0)
}
