//! The sandbox from the outside, with the real /usr/bin/python3: the script contract, one
//! test per attack, the egress guard of scripts allowed the network, and the slots.

mod attacks;
mod contract;
mod egress;
mod slots;
mod support;
