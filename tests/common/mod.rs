pub mod bench;
pub mod deploy;
pub mod nets;
pub mod settings;
pub mod zmq;
