package io.github.ringbus.distributed;

import java.util.HexFormat;

import java.nio.charset.StandardCharsets;

import javax.crypto.spec.SecretKeySpec;

import javax.crypto.spec.PBEKeySpec;

import javax.crypto.SecretKeyFactory;

import org.jgroups.stack.Protocol;

import org.jgroups.auth.MD5Token;

import org.jgroups.protocols.AUTH;

import org.jgroups.protocols.SYM_ENCRYPT;

import org.axonframework.common.AxonConfigurationException;
import org.jgroups.JChannel;
import org.jgroups.protocols.BARRIER;
import org.jgroups.protocols.FD_ALL;
import org.jgroups.protocols.FD_SOCK;
import org.jgroups.protocols.FRAG2;
import org.jgroups.protocols.MERGE3;
import org.jgroups.protocols.MFC;
import org.jgroups.protocols.TCP;
import org.jgroups.protocols.TCPPING;
import org.jgroups.protocols.UNICAST3;
import org.jgroups.protocols.VERIFY_SUSPECT;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.protocols.pbcast.NAKACK2;
import org.jgroups.protocols.pbcast.STABLE;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * The JGroups channel a node uses unless the application gives its own: JGroups' own TCP stack ({@code tcp.xml} of
 * JGroups 4.2) with a static list of nodes ({@code TCPPING}), failure detection by socket ({@code FD_SOCK}: a killed
 * process is suspected as soon as its connections close) and by heartbeat ({@code FD_ALL}: a hung one after the
 * failure detection timeout). With a shared secret, also JGroups' {@code SYM_ENCRYPT} (every message encrypted with an
 * AES key derived from the secret) and {@code AUTH} (a join request must carry a token derived from it).
 */
final class JGroupsChannels {

    private JGroupsChannels() {
    }

    /**
     * What the TCP channel is built from (the node's settings, as its builder validated them): values only, so that
     * this class does not depend on the bus.
     */
    record Tcp(String bindAddress, int bindPort, List<InetSocketAddress> initialHosts,
               java.time.Duration failureDetectionTimeout, String sharedSecret, String clusterName) {
    }

    static JChannel tcp(Tcp settings) {
        long timeout = settings.failureDetectionTimeout().toMillis();
        try {
            InetAddress bindAddress = InetAddress.getByName(settings.bindAddress());
            List<InetSocketAddress> hosts = new ArrayList<>();
            for (InetSocketAddress host : settings.initialHosts()) {
                hosts.add(new InetSocketAddress(host.getHostString(), host.getPort()));
            }
            String secret = settings.sharedSecret();
            List<Protocol> stack = new ArrayList<>(List.of(
                    new TCP().setValue("bind_addr", bindAddress)
                             .setValue("bind_port", settings.bindPort())
                             .setValue("port_range", 0),
                    new TCPPING().setInitialHosts(hosts).setPortRange(0),
                    new MERGE3().setMinInterval(2_000).setMaxInterval(5_000),
                    new FD_SOCK(),
                    new FD_ALL().setValue("timeout", timeout).setValue("interval", Math.max(100, timeout / 3)),
                    new VERIFY_SUSPECT().setTimeout(Math.min(500, timeout)),
                    new BARRIER()));
            if (secret != null) {
                // Directly below NAKACK2, as JGroups places it: every message above the failure detection is
                // encrypted with the cluster's key.
                SYM_ENCRYPT encrypt = new SYM_ENCRYPT();
                encrypt.setSecretKey(new SecretKeySpec(derive(secret, settings.clusterName(), "encryption"), "AES"));
                stack.add(encrypt);
            }
            stack.add(new NAKACK2().setUseMcastXmit(false));
            stack.add(new UNICAST3());
            stack.add(new STABLE());
            if (secret != null) {
                // Directly below GMS: a join request without the cluster's token is refused. The token is derived
                // from the secret (never the secret itself), so that it reveals nothing that could decrypt messages.
                AUTH auth = new AUTH();
                MD5Token token = new MD5Token(HexFormat.of().formatHex(derive(secret, settings.clusterName(), "join")),
                                              "SHA");
                auth.setAuthToken(token);
                token.setAuth(auth);
                stack.add(auth);
            }
            stack.add(new GMS().setJoinTimeout(2_000).setPrintLocalAddr(false));
            stack.add(new MFC());
            stack.add(new FRAG2());
            return new JChannel(stack);
        } catch (Exception e) {
            throw new AxonConfigurationException(
                    "DistributedRingCommandBus: could not build the JGroups TCP channel on " + settings.bindAddress()
                            + ":" + settings.bindPort() + ": " + e.getMessage(), e);
        }
    }

    /**
     * A 256-bit key from the shared secret, for one purpose, by PBKDF2 (HMAC-SHA256, salted with the cluster's name
     * and the purpose): the join token and the encryption key are unrelated, and guessing the secret from a token
     * costs a PBKDF2 run per guess.
     */
    static byte[] derive(String secret, String clusterName, String purpose) throws Exception {
        PBEKeySpec spec = new PBEKeySpec(secret.toCharArray(),
                                         ("ringbus/" + clusterName + "/" + purpose).getBytes(StandardCharsets.UTF_8),
                                         100_000, 256);
        try {
            return SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256").generateSecret(spec).getEncoded();
        } finally {
            spec.clearPassword();
        }
    }
}
