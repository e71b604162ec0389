pub mod settings;
pub mod zmq;
