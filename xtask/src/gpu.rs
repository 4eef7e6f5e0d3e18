//! Is there a GPU the labs can use? Asked once per command, the way the labs ask.

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
