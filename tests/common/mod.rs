pub mod bench;
pub mod settings;
pub mod zmq;
