pub mod bench;
pub mod deploy;
pub mod settings;
pub mod zmq;
